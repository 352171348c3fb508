// The language pickers: a source list and one box per target language, filled from the server's
// GET /languages (what its installed engines serve, and "auto" where its recogniser can tell the
// language; the page's own list if that fails). The hidden
// #target input holds the chosen targets, comma-separated, in the order they were chosen: the
// first is the one shown and played, as with ?target=pt,es.
"use strict";

const LANGUAGES = {
  sources: ["en", "es", "pt", "de", "fr", "it", "ca", "gl", "ro"],
  targets: ["en", "es", "pt", "de", "fr", "it", "ca", "gl"],
  names: { auto: "any language (detected)", en: "English", es: "Spanish", pt: "Portuguese", de: "German",
           fr: "French", it: "Italian", ca: "Catalan", gl: "Galician", ro: "Romanian" },
  pairs: null, // source -> targets a path reaches; null: any
  anySource: false, // listener mode: the talk's source is the speaker's, so no target is ruled out
};

function chosenTargets() {
  return document.getElementById("target").value.split(",").map((t) => t.trim()).filter((t) => t);
}

function setTargets(codes) {
  document.getElementById("target").value = codes.join(",");
  for (const box of document.querySelectorAll("#targets input")) box.checked = codes.includes(box.value);
}

function setSource(code) {
  const select = document.getElementById("source");
  if (![...select.options].some((o) => o.value === code)) select.add(new Option(code, code)); // the server says if not served
  select.value = code;
  markReachable();
}

// A target the source cannot reach (or the source itself) cannot be chosen; with "auto" (the
// server tells the language from the first speech) any target can.
function markReachable() {
  const source = document.getElementById("source").value;
  const reach = LANGUAGES.pairs && LANGUAGES.pairs[source];
  for (const box of document.querySelectorAll("#targets input")) {
    box.disabled = !LANGUAGES.anySource && (box.value === source || (reach ? !reach.includes(box.value) : false));
    box.parentElement.title = box.disabled ? `not served from ${LANGUAGES.names[source] || source}` : "";
  }
  const kept = chosenTargets().filter((t) => {
    const box = document.querySelector(`#targets input[value="${t}"]`);
    return !box || !box.disabled;
  });
  setTargets(kept);
}

function drawLanguages() {
  const select = document.getElementById("source");
  const source = select.value;
  select.replaceChildren(...LANGUAGES.sources.map((c) => new Option(LANGUAGES.names[c] || c, c)));
  if (!LANGUAGES.sources.includes(source)) select.add(new Option(source, source));
  select.value = source;
  const group = document.getElementById("targets");
  group.replaceChildren(document.createTextNode("to"));
  for (const code of LANGUAGES.targets) {
    const box = Object.assign(document.createElement("input"), { type: "checkbox", value: code });
    box.addEventListener("change", () => {
      const rest = chosenTargets().filter((t) => t !== code);
      setTargets(box.checked ? [...rest, code] : rest);
    });
    const label = document.createElement("label");
    label.append(box, ` ${LANGUAGES.names[code] || code}`);
    group.append(label);
  }
  setTargets(chosenTargets());
  markReachable();
}

async function loadLanguages(token) {
  drawLanguages();
  try {
    const url = new URL("languages", location.href);
    if (token) url.searchParams.set("token", token);
    const response = await fetch(url);
    if (!response.ok) return;
    const served = await response.json();
    LANGUAGES.sources = (served.detect ? ["auto"] : []).concat(served.sources.map((l) => l.code));
    LANGUAGES.targets = served.targets.map((l) => l.code);
    for (const l of [...served.sources, ...served.targets]) LANGUAGES.names[l.code] = l.name;
    LANGUAGES.pairs = served.pairs || null;
    drawLanguages();
  } catch (err) {
    // an older server, or the page opened from elsewhere: the page's own list stays
  }
}

document.getElementById("source").addEventListener("change", markReachable);
