"""The review page's style and script, and which key marks which mode.

Plain DOM code and no framework, as the report's trace view: the page loads nothing from anywhere.
Every text from a trace, the judge or a reviewer's note is escaped (``esc``) or set as
``textContent``, and the CSP lets only this script run, so hostile text stays text.
"""

from __future__ import annotations

# Keys by row of the keyboard, one row per category of the taxonomy (mast-v3: 1-5, q-y, z-c);
# j, k, a, s, g and n are taken by the other actions, so no row holds them.
_ROWS = ("1234567890", "qwertyuiop", "zxcvbm")
_SPARE = "fhl-=[];',./"


def mode_keys(codes: list[str]) -> dict[str, str]:
    """A distinct key per mode code: the category's keyboard row where it fits, else spare keys."""
    keys: dict[str, str] = {}
    used: set[str] = set()
    categories: dict[str, list[str]] = {}
    for code in codes:
        categories.setdefault(code.split(".")[0], []).append(code)
    for row, members in zip(_ROWS, categories.values(), strict=False):
        if len(members) <= len(row):
            for code, key in zip(members, row, strict=False):
                keys[code] = key
                used.add(key)
    spare = iter(k for k in _ROWS[0] + _ROWS[1] + _ROWS[2] + _SPARE if k not in used)
    for code in codes:
        if code not in keys:
            spare_key = next(spare, None)
            if spare_key is None:
                break  # more modes than keys: the rest are marked with the mouse
            keys[code] = spare_key
            used.add(spare_key)
    return {code: keys.get(code, "") for code in codes}


STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;overflow-wrap:break-word}header{padding:.5rem 1rem;background:#f4f4f8;border-bottom:1px solid #ccd}
.note{color:#666;font-size:.82rem}#help{margin:.3rem 1rem}main{display:flex;gap:1rem;padding:0 1rem}
#transcript{flex:3;min-width:0}#side{flex:2;min-width:0}
.step{border-left:3px solid #ddd;margin:.4rem 0;padding:.2rem .6rem;white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:.78rem}
.step.cited{border-left-color:#d9534f}.step.first{background:#fff4f4}mark{background:#ffe08a}
table{border-collapse:collapse;font-size:.8rem;width:100%}td,th{border:1px solid #ddd;padding:.2rem .35rem;vertical-align:top;overflow-wrap:anywhere}
th{overflow-wrap:normal}kbd{border:1px solid #aaa;border-radius:3px;padding:0 .25rem;font-size:.75rem}
tr.unsaved td:last-child{background:#fff4d6}.present{color:#b02a2a}.absent{color:#1a7f37}.unsure{color:#7a5d00}tr.differs{background:#fde2e2}
button.on{font-weight:bold;outline:2px solid #4a6fa5}.saved{color:#1a7f37}.unsaved{color:#b02a2a}
#queue-tag.improve{background:#ffe08a;padding:0 .4rem;border-radius:3px}.ev{font-size:.75rem;color:#444}
input,textarea{font:inherit;font-size:.85rem}textarea{width:100%;height:4rem}
"""

SCRIPT = r"""
(function(){
const cfg = JSON.parse(document.getElementById('mast-review-config').textContent);
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
const byKey = Object.fromEntries(cfg.modes.filter((m) => m.key).map((m) => [m.key, m.code]));
const CYCLE = {present: 'absent', absent: 'unsure', unsure: 'present'};
let pos = cfg.start, cur = null, pending = 0;
$('reviewer').textContent = cfg.reviewer;
async function api(path, body){
  const opts = {headers: {'X-Mast-Token': cfg.token}};
  if (body !== undefined) { opts.method = 'POST'; opts.headers['Content-Type'] = 'application/json'; opts.body = JSON.stringify(body); }
  const r = await fetch(path, opts);
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.status);
  return data;
}
function state(text, ok){ const el = $('save-state'); el.textContent = text; el.className = ok ? 'saved' : 'unsaved'; }
function marked(step){
  let out = '', at = 0;
  for (const [s, e] of step.marks) { if (s < at) continue; out += esc(step.text.slice(at, s)) + '<mark>' + esc(step.text.slice(s, e)) + '</mark>'; at = e; }
  return out + esc(step.text.slice(at));
}
function drawTrace(){
  const t = cur, r = t.row;
  const first = r.first_failure, cited = new Set(r.modes.flatMap((m) => m.evidence.map((e) => e.step)));
  // A plain-text trace's id is its content hash: it is titled by its source file, the hash beside it.
  const title = r.id.startsWith('sha256:') && r.source ? `${esc(r.source.split('/').pop())} <span class="note">${esc(r.id.slice(0, 19))}…</span>` : esc(r.id);
  $('transcript').innerHTML = `<h3>${title}</h3><p class="note">${esc(r.source)} · judge ${esc(r.judge)}</p>` +
    (r.task ? `<p><b>Task:</b> ${esc(r.task.slice(0, 2000))}</p>` : '') +
    (r.summary ? `<p><b>Judge's summary:</b> ${esc(r.summary)}</p>` : '') +
    (r.note ? `<p class="note">${esc(r.note)}</p>` : '') +
    r.steps.map((s) => `<div class="step${cited.has(s.i) ? ' cited' : ''}${first && first.step === s.i ? ' first' : ''}" data-step="${s.i}">` +
      `<span class="note">S${s.i}${s.agent ? ' · ' + esc(s.agent) : ''}</span>\n${marked(s)}</div>`).join('');
  const jf = t.judge_first;
  $('first').innerHTML = `<p><b>First failure</b> (judge: ${jf.step == null ? 'no step' : 'step ' + esc(jf.step)}${jf.agent ? ', agent ' + esc(jf.agent) : ''}${first && first.code ? ', ' + esc(first.code) : ''})</p>` +
    `<label>step <input id="first-step" type="number" min="0" size="5"></label> <label>agent <input id="first-agent" type="text" size="16"></label>`;
  if (r.steps.length) $('first-step').max = Math.max(...r.steps.map((s) => s.i));
  $('first-step').value = t.values.first_step ?? '';
  $('first-agent').value = t.values.first_agent ?? '';
  $('note-box').innerHTML = `<label>note<textarea id="note"></textarea></label><div id="note-saved" class="note"></div>`;
  $('note').value = t.values.note ?? '';
  drawVerdicts();
}
// What a save answered redraws only this: the fields being typed in keep their text and focus.
function drawVerdicts(){
  const t = cur, r = t.row, mine = t.values.modes;
  $('position').textContent = `trace ${t.position + 1} of ${t.total}` + (t.reviewed ? ' (reviewed)' : '');
  const tag = $('queue-tag'); tag.textContent = t.queue === 'improve' ? 'improve queue: picked for disagreement, left out of the estimate' : 'random sample';
  tag.className = t.queue;
  const rows = cfg.modes.map((m) => {
    const v = r.modes.find((x) => x.code === m.code) || {present: null, evidence: [], explanation: ''};
    const judged = t.judge[m.code] ?? null, mineV = mine[m.code] ?? null, shownV = wanted(t.position, m.code) ?? mineV;
    const ev = v.evidence.map((e) => `<div class="ev">S${esc(e.step)}: “${esc(e.quote)}”${e.verified ? '' : ' (not found in the step)'}</div>`).join('');
    const buttons = ['present', 'absent', 'unsure'].map((x) => `<button type="button" data-code="${esc(m.code)}" data-value="${x}" class="${shownV === x ? 'on' : ''}">${x}</button>`).join(' ');
    const differs = mineV && judged && mineV !== 'unsure' && mineV !== judged;
    return `<tr data-code="${esc(m.code)}" data-mine="${esc(mineV || '')}" data-saved="${mineV ? '1' : ''}" class="${differs ? 'differs' : ''}${shownV !== mineV ? ' unsaved' : ''}">` +
      `<td><kbd>${esc(m.key)}</kbd></td><td>${esc(m.code)} ${esc(m.name)}</td>` +
      `<td class="${esc(judged || '')}">${judged === null ? 'not assessed' : esc(judged)}${v.confidence == null ? '' : ' (' + v.confidence.toFixed(2) + ')'}` +
      `${v.present ? '<div class="ev">' + esc(v.explanation) + '</div>' + ev : ''}</td><td>${buttons}</td></tr>`;
  }).join('');
  $('verdicts').innerHTML = `<table><thead><tr><th>key</th><th>mode</th><th>judge</th><th>you</th></tr></thead><tbody>${rows}</tbody></table>` +
    `<p><button type="button" id="accept">accept the judge's verdicts (a)</button> <button type="button" id="prev">previous (k)</button> <button type="button" id="next">next (j)</button></p>`;
  $('note-saved').textContent = t.values.note ? 'saved note: ' + t.values.note_shown.slice(0, 200) : '';
}
// Loads: the last one asked for wins (j j j goes three traces on, whatever order the answers come in).
let target = pos, loadSeq = 0, loading = 0;
async function load(p){
  if (p < 0 || p >= cfg.total) return;
  const seq = ++loadSeq; target = p; loading += 1;
  try {
    const t = await api(`/api/trace/${p}`);
    if (seq === loadSeq) {
      if (!cur || cur.position !== p) state(pending ? 'saving…' : '', true);  // the status is this trace's
      cur = t; pos = p; drawTrace();
    }
  } catch (e) { if (seq === loadSeq) { target = pos; state('NOT loaded: ' + e.message, false); } }
  finally { loading -= 1; }
}
// Saves go one at a time, in the order the keys were pressed: the gold's last line is the last key.
// A mode's value asked for but not yet answered is kept in `asked`, so a key pressed twice cycles twice.
let chain = Promise.resolve();
const asked = new Map();
function wanted(p, code){ return asked.get(p + ' ' + code); }
function save(changes){
  const p = pos;
  for (const c of changes) if (c.field === 'mode') asked.set(p + ' ' + c.code, c.value);
  pending += 1; state('saving…', false);
  if (cur && cur.position === p) drawVerdicts();
  chain = chain.then(async () => {
    try {
      const out = await api('/api/save', {position: p, changes});
      for (const c of changes) if (c.field === 'mode' && wanted(p, c.code) === out.values.modes[c.code]) asked.delete(p + ' ' + c.code);
      if (cur && cur.position === p) { cur.values = out.values; cur.reviewed = out.reviewed; drawVerdicts(); }
      if (cur && cur.position === p) state(`saved (${out.saved} change${out.saved === 1 ? '' : 's'})`, true);
      else if (pending === 1) state('', true);  // a save of the trace left behind: not this one's status
      stats();
    } catch (e) {
      for (const key of [...asked.keys()]) if (key.startsWith(p + ' ')) asked.delete(key);
      if (cur && cur.position === p) drawVerdicts();
      state('NOT saved: ' + e.message, false);
    } finally { pending -= 1; }
  });
  return chain;
}
function cycle(code){
  const mine = wanted(pos, code) ?? cur.values.modes[code], judged = cur.judge[code] ?? null;
  const next = mine ? CYCLE[mine] : (judged === 'present' ? 'absent' : 'present');
  return save([{field: 'mode', code, value: next}]);
}
async function stats(){
  let s;
  loading += 1;
  try { s = await api('/api/stats'); } catch (e) { return; }  // the save's own state says what went wrong
  finally { loading -= 1; }
  const f = (x) => x == null ? '–' : (Math.abs(x) < 0.005 ? 0 : x).toFixed(2);  // never -0.00
  $('stats').innerHTML = `<p class="note">${s.reviewed} of ${s.total} traces reviewed by you</p><table><thead><tr><th>mode</th><th>cells</th><th>kappa [95% CI]</th><th>more for ±0.1</th></tr></thead><tbody>` +
    s.modes.filter((m) => m.n).map((m) => `<tr data-code="${esc(m.code)}"><td>${esc(m.code)}</td><td>${m.n}</td><td>${m.reason ? '– (' + esc(m.reason) + ')' : f(m.kappa) + ' [' + f(m.low) + ', ' + f(m.high) + ']'}</td><td>${m.more == null ? 'cannot be estimated yet' : '~' + m.more}</td></tr>`).join('') + '</tbody></table>' +
    (s.reviewer_disagreements.length ? `<p class="note">${s.reviewer_disagreements.length} cell(s) where reviewers disagree (left out of the gold):</p><ul class="split">` +
      s.reviewer_disagreements.map((d) => `<li>${esc(d.trace_id)} ${esc(d.code)}: ${esc(d.values)}</li>`).join('') + '</ul>' : '');
}
function field(id){ return id === 'first-step' ? 'first_step' : id === 'first-agent' ? 'first_agent' : 'note'; }
function commit(el){
  if (!cur) return;
  const name = field(el.id), value = fieldValue(el);
  if (value !== (cur.values[name] ?? null)) save([{field: name, value}]);
}
function fieldValue(el){
  if (el.id === 'first-step') { return el.value === '' ? null : parseInt(el.value, 10); }
  return el.value === '' ? null : el.value;
}
document.addEventListener('keydown', (ev) => {
  const el = ev.target;
  if (el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA')) {
    // Esc leaves the field and keeps what was typed: a changed value is saved, as Enter does.
    if (ev.key === 'Escape') { ev.preventDefault(); commit(el); el.blur(); }
    else if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); save([{field: field(el.id), value: fieldValue(el)}]); el.blur(); }
    return;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey || !cur) return;
  const k = ev.key;
  if (k === 'j') load(target + 1);
  else if (k === 'k') load(target - 1);
  else if (k === 'a') save([{field: 'accept'}]);
  else if (k === 's') $('first-step').focus();
  else if (k === 'g') $('first-agent').focus();
  else if (k === 'n') $('note').focus();
  else if (byKey[k]) cycle(byKey[k]);
  else return;
  ev.preventDefault();
});
document.addEventListener('click', (ev) => {
  const b = ev.target.closest('button');
  if (!b || !cur) return;
  if (b.dataset.value) save([{field: 'mode', code: b.dataset.code, value: b.dataset.value}]);
  else if (b.id === 'accept') save([{field: 'accept'}]);
  else if (b.id === 'next') load(target + 1);
  else if (b.id === 'prev') load(target - 1);
});
// For tests and scripts: saves not yet answered, whether nothing is in flight, the trace shown.
window.mastReview = {pending: () => pending, idle: () => pending === 0 && loading === 0, position: () => pos};
load(pos).then(stats);
})();
"""
