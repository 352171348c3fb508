// Browser client for protocol v1 (docs/protocol.md): microphone -> AudioWorklet -> pcm16 frames
// over the websocket; recognition/translation events -> the page; pcm16 output -> playback.
// URL parameters: token, source, target, autostart=1, seconds=N (stop after N s of capture).
"use strict";

const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);
const FRAME_MS = 100;

const state = {
  ws: null, ctx: null, node: null, stream: null,
  pending: [], pendingSamples: 0, sentSamples: 0,
  sourceWords: [], targetWords: [],
  nextPlay: 0, audioFrames: 0, audioSeconds: 0, pendingAudio: null,
  lags: [], stopTimer: null, ended: false,
};

function setStatus(text, isError) {
  const el = $("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

function showText(which, event) {
  const words = which === "source" ? state.sourceWords : state.targetWords;
  words.push(...event.committed);
  $(which + "-committed").textContent = words.join(" ");
  $(which + "-tentative").textContent = event.tentative.join(" ");
}

function showLag(lag) {
  if (lag === null || lag === undefined) return;
  state.lags.push(lag);
  const sorted = [...state.lags].sort((a, b) => a - b);
  $("lag").textContent = lag.toFixed(2);
  $("lag-p50").textContent = sorted[Math.floor((sorted.length - 1) / 2)].toFixed(2);
}

function play(meta, data) {
  if (meta.codec !== "pcm16") return; // the page asks for pcm16
  const pcm = new Int16Array(data);
  const buffer = state.ctx.createBuffer(1, pcm.length, meta.sample_rate);
  const out = buffer.getChannelData(0);
  for (let i = 0; i < pcm.length; i++) out[i] = pcm[i] / 32768;
  const src = state.ctx.createBufferSource();
  src.buffer = buffer;
  src.connect(state.ctx.destination);
  state.nextPlay = Math.max(state.nextPlay, state.ctx.currentTime + 0.05);
  src.start(state.nextPlay);
  state.nextPlay += buffer.duration;
  state.audioFrames += 1;
  state.audioSeconds += buffer.duration;
  $("audio-frames").textContent = String(state.audioFrames);
  $("audio-seconds").textContent = state.audioSeconds.toFixed(1);
}

function onMessage(msg) {
  if (msg.data instanceof ArrayBuffer) {
    if (state.pendingAudio) play(state.pendingAudio, msg.data);
    state.pendingAudio = null;
    return;
  }
  const event = JSON.parse(msg.data);
  switch (event.type) {
    case "ready": setStatus("listening: speak now"); break;
    case "recognition": showText("source", event); if (event.committed.length) showLag(event.lag); break;
    case "translation": showText("target", event); if (event.committed.length) showLag(event.lag); break;
    case "audio": state.pendingAudio = event; break;
    case "error": setStatus(`error (${event.code}): ${event.message}`, true); break;
    case "done":
      setStatus("done");
      document.body.dataset.done = "1";
      $("summary").textContent = JSON.stringify(event.summary, null, 1);
      break;
  }
}

function sendFrames(force) {
  const frameSamples = Math.round(state.ctx.sampleRate * FRAME_MS / 1000);
  while (state.pendingSamples >= frameSamples || (force && state.pendingSamples > 0)) {
    const n = Math.min(frameSamples, state.pendingSamples);
    const pcm = new Int16Array(n);
    let filled = 0;
    while (filled < n) {
      const head = state.pending[0];
      const take = Math.min(head.length, n - filled);
      for (let i = 0; i < take; i++) pcm[filled + i] = Math.max(-1, Math.min(1, head[i])) * 32767;
      filled += take;
      if (take === head.length) state.pending.shift(); else state.pending[0] = head.subarray(take);
    }
    state.pendingSamples -= n;
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(pcm.buffer);
    state.sentSamples += n;
  }
  $("sent-seconds").textContent = (state.sentSamples / state.ctx.sampleRate).toFixed(1);
}

async function start() {
  $("start").disabled = true;
  setStatus("starting microphone ...");
  try {
    state.ctx = new AudioContext();
    await state.ctx.audioWorklet.addModule("worklet.js");
    state.stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: false, autoGainControl: false },
    });
  } catch (err) {
    setStatus(`cannot use the microphone: ${err.message || err}`, true);
    $("start").disabled = false;
    return;
  }
  const url = new URL("ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  ws.onmessage = onMessage;
  ws.onclose = (e) => {
    if (!document.body.dataset.done && e.code !== 1000) setStatus(`connection closed (${e.code}) ${e.reason}`, true);
    stopCapture();
  };
  ws.onopen = () => {
    ws.send(JSON.stringify({
      type: "hello", version: 1, source: $("source").value, target: $("target").value,
      sample_rate: state.ctx.sampleRate, codec: "pcm16", output_codec: "pcm16",
      token: params.get("token") || "", client: navigator.userAgent.slice(0, 80),
    }));
    const input = state.ctx.createMediaStreamSource(state.stream);
    state.node = new AudioWorkletNode(state.ctx, "capture-processor");
    state.node.port.onmessage = (e) => {
      state.pending.push(e.data);
      state.pendingSamples += e.data.length;
      sendFrames(false);
    };
    input.connect(state.node);
    $("stop").disabled = false;
    const seconds = parseFloat(params.get("seconds") || "0");
    if (seconds > 0) state.stopTimer = setTimeout(stop, seconds * 1000);
  };
}

function stopCapture() {
  if (state.node) { state.node.port.onmessage = null; state.node.disconnect(); state.node = null; }
  if (state.stream) { state.stream.getTracks().forEach((t) => t.stop()); state.stream = null; }
  $("stop").disabled = true;
}

function stop() {
  if (state.ended) return;
  state.ended = true;
  clearTimeout(state.stopTimer);
  if (state.ctx && state.pendingSamples) sendFrames(true);
  stopCapture();
  if (state.ws && state.ws.readyState === WebSocket.OPEN) {
    state.ws.send(JSON.stringify({ type: "end" }));
    setStatus("finishing ...");
  }
}

$("start").addEventListener("click", start);
$("stop").addEventListener("click", stop);
if (params.get("source")) $("source").value = params.get("source");
if (params.get("target")) $("target").value = params.get("target");
if (params.get("autostart") === "1") start();
