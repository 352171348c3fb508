// Browser client for protocol v2 (docs/protocol.md).
// Speaker mode: microphone -> AudioWorklet -> pcm16 frames over the websocket; recognition and
// translation events -> the page; pcm16 output of the first target -> playback. After a network drop
// the page resumes its session by itself (the frames the server did not get are sent again).
// Listener mode: /ws/listen for one session and one language; its text and audio, live.
// URL parameters: token, source, target (one, or several comma-separated), autostart=1, seconds=N
// (stop after N s of capture); listen=SESSION with target=xx opens the listener mode.
"use strict";

const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);
const FRAME_MS = 100;

const state = {
  ws: null, ctx: null, node: null, stream: null,
  pending: [], pendingSamples: 0, sentSamples: 0,
  sourceWords: [], targetWords: [],
  nextPlay: 0, audioFrames: 0, audioSeconds: 0, pendingAudio: null,
  lags: [], heardLags: [], stopTimer: null, ended: false,
  // resume: the session, the last event seen, and the frames not yet known to have arrived
  session: null, resumeToken: "", lastSeq: 0, frames: [], frameBase: 0, streaming: false,
  endSent: false, dropSince: 0, retryDelay: 200, shownTarget: null, targets: [], listening: false,
  peaks: [], // the loudest sample of each of the last LEVEL_FRAMES frames
};
const KEEP_FRAMES = 600; // 60 s of frames kept for a resume
const LEVEL_FRAMES = 20; // the mic level shown is the loudest sample of the last 2 s

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

// id: "lag" (the text: how far recognition and translation trail the speaker) or "heard-lag"
// (the listener timeline: when each spoken word is heard after its source word was said)
function showLag(id, lags, ...latest) {
  const known = latest.filter((lag) => lag !== null && lag !== undefined);
  if (!known.length) return;
  lags.push(...known);
  const sorted = [...lags].sort((a, b) => a - b);
  $(id).textContent = known[known.length - 1].toFixed(2);
  $(id + "-p50").textContent = sorted[Math.floor((sorted.length - 1) / 2)].toFixed(2);
}

function countWords(id, text) {
  const n = (text || "").split(/\s+/).filter(Boolean).length;
  $(id).textContent = String(Number($(id).textContent) + n);
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

function untranslatedStatus(language) {
  document.body.dataset.untranslated = language;
  setStatus(`the speaker speaks ${LANGUAGES.names[language] || language}, the language you chose: nothing to translate`);
}

function shown(event) {
  return !event.target || !state.shownTarget || event.target === state.shownTarget;
}

function onReady(event) {
  state.session = event.session;
  state.resumeToken = event.resume_token;
  state.targets = event.targets;
  state.shownTarget = event.targets[0];
  document.body.dataset.session = event.session;
  if (event.resumed) document.body.dataset.resumes = String(Number(document.body.dataset.resumes || "0") + 1);
  // the server has every frame before frames_received: send the rest (again, after a drop)
  const from = Math.max(0, event.frames_received - state.frameBase);
  for (const frame of state.frames.slice(from)) state.ws.send(frame);
  if (state.ended && !event.input_ended) { state.ws.send(JSON.stringify({ type: "end" })); state.endSent = true; }
  setStatus(state.ended ? "finishing ..." : event.resumed ? "listening: speak now (resumed)" : "listening: speak now");
  state.streaming = true;
  state.retryDelay = 200;
  const links = $("listen-links");
  links.textContent = "";
  for (const [target, wsUrl] of Object.entries(event.listen || {})) {
    const page = new URL(location.pathname, location.href);
    page.searchParams.set("listen", event.session);
    page.searchParams.set("target", target);
    page.searchParams.set("source", $("source").value);
    if (params.get("token")) page.searchParams.set("token", params.get("token"));
    const a = document.createElement("a");
    a.href = page.toString();
    a.textContent = `listen in ${target}`;
    a.target = "_blank";
    a.dataset.ws = wsUrl;
    links.append(a, " ");
  }
}

function onMessage(msg) {
  if (msg.data instanceof ArrayBuffer) {
    if (state.pendingAudio) {
      if (shown(state.pendingAudio)) play(state.pendingAudio, msg.data);
      state.lastSeq = Math.max(state.lastSeq, state.pendingAudio.seq || 0);
    }
    state.pendingAudio = null;
    return;
  }
  const event = JSON.parse(msg.data);
  if (typeof event.seq === "number" && event.seq <= state.lastSeq) return; // seen before a drop
  if (typeof event.seq === "number" && event.type !== "audio") state.lastSeq = event.seq;
  switch (event.type) {
    case "ready": onReady(event); break;
    case "listening":
      state.shownTarget = event.target;
      if (event.source === event.target) untranslatedStatus(event.source);
      else setStatus(`listening to session ${event.session} in ${event.target}`);
      break;
    case "recognition": showText("source", event); if (event.committed.length) showLag("lag", state.lags, event.lag); break;
    case "translation":
      if (!shown(event)) break;
      showText("target", event); if (event.committed.length) showLag("lag", state.lags, event.lag); break;
    case "audio": state.pendingAudio = event; break;
    case "synthesis":
      if (!shown(event)) break;
      showLag("heard-lag", state.heardLags, ...(event.word_lags || []));
      // spoken by the relief voice: the main voice fell too far behind the talk
      if (event.voice === "relief") countWords("relief-words", event.text);
      break;
    case "unspoken":  // too far behind even so: not spoken (the words are in the translation above)
      if (shown(event)) countWords("unspoken-words", event.text); break;
    case "language":  // the server told the language from the first speech (source "auto")
      document.body.dataset.language = event.source;
      if ((event.untranslated || []).includes(state.shownTarget)) {
        // the speaker speaks the language shown: a speaker's page shows the next target instead
        const next = state.targets.find((t) => !event.untranslated.includes(t));
        if (state.listening || !next) { untranslatedStatus(event.source); break; }
        state.shownTarget = next;
      }
      setStatus(`listening: the speaker speaks ${LANGUAGES.names[event.source] || event.source} (told from ${event.speech_s} s of speech)`);
      break;
    case "error": setStatus(`error (${event.code}): ${event.message}`, true); break;
    case "done":
      setStatus(event.reason === "speaker_disconnected" ? "done: the speaker disconnected" : "done");
      document.body.dataset.done = "1";
      document.body.dataset.reason = event.reason || "";
      $("summary").textContent = JSON.stringify(event.summary || { reason: event.reason }, null, 1);
      break;
  }
}

function sendFrames(force) {
  const frameSamples = Math.round(state.ctx.sampleRate * FRAME_MS / 1000);
  while (state.pendingSamples >= frameSamples || (force && state.pendingSamples > 0)) {
    const n = Math.min(frameSamples, state.pendingSamples);
    const pcm = new Int16Array(n);
    let filled = 0;
    let peak = 0;
    while (filled < n) {
      const head = state.pending[0];
      const take = Math.min(head.length, n - filled);
      for (let i = 0; i < take; i++) {
        pcm[filled + i] = Math.max(-1, Math.min(1, head[i])) * 32767;
        peak = Math.max(peak, Math.abs(head[i]));
      }
      filled += take;
      if (take === head.length) state.pending.shift(); else state.pending[0] = head.subarray(take);
    }
    state.pendingSamples -= n;
    state.peaks.push(peak);
    if (state.peaks.length > LEVEL_FRAMES) state.peaks.shift();
    state.frames.push(pcm.buffer);
    if (state.frames.length > KEEP_FRAMES) { state.frames.shift(); state.frameBase += 1; }
    if (state.streaming && state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(pcm.buffer);
    state.sentSamples += n;
  }
  $("sent-seconds").textContent = (state.sentSamples / state.ctx.sampleRate).toFixed(1);
  showLevel();
}

function showLevel() {
  const peak = Math.max(0, ...state.peaks);
  const db = peak > 0 ? Math.max(-99, 20 * Math.log10(peak)) : -99;
  $("mic-meter").value = Math.max(-60, db);
  $("mic-level").textContent = db <= -99 ? "silent" : db.toFixed(0);
}

async function start() {
  if (!chosenTargets().length) {
    setStatus("choose a language to translate into", true);
    return;
  }
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
  connect(false);
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
}

function wsUrl(path) {
  const url = new URL(path, location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  return url;
}

function connect(resume) {
  const ws = new WebSocket(wsUrl("ws"));
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  state.streaming = false;
  ws.onmessage = onMessage;
  ws.onclose = (e) => {
    if (ws !== state.ws) return;
    const dropped = e.code === 1006 && !document.body.dataset.done && state.session;
    if (dropped) {
      // a network drop: resume within the server's grace period (30 s by default)
      state.dropSince = state.dropSince || Date.now();
      if (Date.now() - state.dropSince < 30000) {
        setStatus("connection lost: resuming ...", true);
        setTimeout(() => connect(true), state.retryDelay);
        state.retryDelay = Math.min(state.retryDelay * 2, 2000);
        return;
      }
    }
    if (!document.body.dataset.done && e.code !== 1000) setStatus(`connection closed (${e.code}) ${e.reason}`, true);
    stopCapture();
  };
  ws.onopen = () => {
    state.dropSince = 0;
    const raw = chosenTargets();
    const hello = {
      type: "hello", version: 2, source: $("source").value, target: raw[0] || "es",
      sample_rate: state.ctx.sampleRate, codec: "pcm16", output_codec: "pcm16",
      token: params.get("token") || "", client: navigator.userAgent.slice(0, 80),
    };
    if (raw.length > 1) hello.targets = raw;
    if (resume) hello.resume = { session: state.session, token: state.resumeToken, last_seq: state.lastSeq };
    ws.send(JSON.stringify(hello));
  };
}

async function listen() {
  if (!chosenTargets().length) {
    setStatus("choose a language to listen in", true);
    return;
  }
  $("listen-button").disabled = true;
  $("start").disabled = true;
  state.listening = true;
  state.ctx = new AudioContext();
  const url = wsUrl("ws/listen");
  url.searchParams.set("session", $("listen-session").value.trim());
  url.searchParams.set("target", chosenTargets()[0] || "");
  if (params.get("token")) url.searchParams.set("token", params.get("token"));
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  ws.onmessage = onMessage;
  ws.onclose = (e) => {
    if (!document.body.dataset.done && e.code !== 1000) setStatus(`connection closed (${e.code}) ${e.reason}`, true);
    $("listen-button").disabled = false;
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
  if (state.streaming && state.ws && state.ws.readyState === WebSocket.OPEN) {
    state.ws.send(JSON.stringify({ type: "end" }));
    state.endSent = true;
    setStatus("finishing ...");
  }
}

$("start").addEventListener("click", start);
$("stop").addEventListener("click", stop);
$("listen-button").addEventListener("click", listen);
$("listen-session").addEventListener("input", () => { // listening: any language of the talk may be chosen
  LANGUAGES.anySource = Boolean($("listen-session").value.trim());
  markReachable();
});
if (params.get("listen")) LANGUAGES.anySource = true; // a listener picks a language of someone else's talk
if (params.get("source")) setSource(params.get("source"));
if (params.get("target")) setTargets(params.get("target").split(",").map((t) => t.trim()).filter((t) => t));
else setTargets(["es"]);
loadLanguages(params.get("token"));
if (params.get("listen")) {
  $("listen-session").value = params.get("listen");
  if (params.get("autostart") === "1") listen();
} else if (params.get("autostart") === "1") start();
