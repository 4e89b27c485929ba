// The query page: plain script, no build step, nothing loaded from outside
// the server. State lives in the URL query (service, from, to, level, q, re,
// desc, live), so a link reproduces a view.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const LEVELS = ['none', 'trace', 'debug', 'info', 'warn', 'error', 'fatal'];
  const ROW = 22;          // px, matches --row in style.css
  const LIMIT = 100000;    // rows a search loads at most
  const css = getComputedStyle(document.documentElement);
  const COLOR = Object.fromEntries(LEVELS.map((l) => [l, css.getPropertyValue('--' + l).trim()]));
  const FIXED = new Set(['ts', 'level', 'service', 'host', 'id', 'message']);
  // A control line (in-band error, stats, dropped events) has this key; an
  // event never has it, whatever its fields (the server renames an
  // attribute of that name), so nothing else is looked at to tell them apart.
  const CONTROL = '@ingest';
  // The page's own rows that are no event (a gap in the live stream) are
  // marked by a symbol, which no parsed event can have.
  const MARKER = Symbol('marker');

  let token = sessionStorage.getItem('ingest-token') || '';
  let rows = [];           // events, in display order
  let open = -1;           // index of the expanded row
  let openH = 0;           // its detail's height
  let search = null;       // AbortController of the running search
  let live = null;         // AbortController of the live tail
  let histo = null;        // {from, iv, n, counts: [{level: count}]} (ms)
  let drawn = false;

  // ---- API ---------------------------------------------------------------

  let asking = null;
  function askToken() {
    if (!asking) {
      asking = new Promise((resolve) => {
        const d = $('auth');
        d.returnValue = '';
        d.onclose = () => {
          asking = null;
          const t = $('token').value.trim();
          if (d.returnValue === 'ok' && t) {
            token = t;
            sessionStorage.setItem('ingest-token', t);
            resolve(true);
          } else {
            resolve(false);
          }
        };
        d.showModal();
      });
    }
    return asking;
  }

  async function api(path, signal) {
    for (;;) {
      const headers = token ? { Authorization: 'Bearer ' + token } : {};
      const resp = await fetch(path, { headers, signal, cache: 'no-store' });
      if (resp.status === 401) {
        if (await askToken()) continue;
        throw new Error('the server needs a token for its API');
      }
      if (!resp.ok) {
        let msg = resp.status + ' ' + resp.statusText;
        try { msg = (await resp.json()).error || msg; } catch (_) { /* not JSON */ }
        throw new Error(msg);
      }
      return resp;
    }
  }

  // ndjson reads a streamed NDJSON answer, calling each for every object.
  async function ndjson(resp, each) {
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      const parts = buf.split('\n');
      buf = parts.pop();
      for (const p of parts) if (p.trim()) each(JSON.parse(p));
    }
    if (buf.trim()) each(JSON.parse(buf));
  }

  // ---- state <-> URL -----------------------------------------------------

  function state() {
    return {
      service: $('service').value || '*', from: $('from').value.trim() || '-15m', to: $('to').value.trim() || 'now',
      level: $('level').value, q: $('q').value, re: $('re').checked, desc: $('desc').checked, live: $('live').checked,
    };
  }

  function saveURL(st) {
    const p = new URLSearchParams();
    p.set('service', st.service);
    p.set('from', st.from);
    p.set('to', st.to);
    if (st.level) p.set('level', st.level);
    if (st.q) p.set('q', st.q);
    if (st.re) p.set('re', '1');
    if (st.desc) p.set('desc', '1');
    if (st.live) p.set('live', '1');
    history.replaceState(null, '', '?' + p.toString());
  }

  function loadURL() {
    const p = new URLSearchParams(location.search);
    const svc = p.get('service');
    if (svc) addService(svc);
    $('service').value = svc || '*';
    $('from').value = p.get('from') || '-15m';
    $('to').value = p.get('to') || 'now';
    $('level').value = p.get('level') || '';
    $('q').value = p.get('q') || p.get('grep') || '';
    $('re').checked = p.get('re') === '1' || p.has('grep');
    $('desc').checked = p.get('desc') === '1' || p.get('order') === 'desc';
    $('live').checked = p.get('live') === '1';
  }

  function addService(name) {
    const sel = $('service');
    if (![...sel.options].some((o) => o.value === name)) sel.add(new Option(name, name));
  }

  function queryArgs(st) {
    const p = new URLSearchParams({ service: st.service, from: st.from, to: st.to });
    if (st.level) p.set('level', st.level);
    if (st.q) p.set(st.re ? 'grep' : 'q', st.q);
    return p;
  }

  // parseTime mirrors the server's forms (now, -15m, RFC 3339) to size the
  // histogram; the server decides what the search covers.
  function parseTime(s, now) {
    s = s.trim();
    if (/^now$/i.test(s)) return now;
    const m = /^(?:now)?([+-])((?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+)$/i.exec(s);
    if (m) {
      const unit = { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5 };
      let d = 0;
      for (const [, n, u] of m[2].matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gi)) d += n * unit[u.toLowerCase()];
      return m[1] === '-' ? now - d : now + d;
    }
    const t = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(s) || !/T/.test(s) ? s : s + 'Z');
    return isNaN(t) ? null : t;
  }

  function interval(from, to) {
    const span = to - from;
    for (const [iv, name] of [[6e4, '1m'], [3e5, '5m'], [9e5, '15m'], [36e5, '1h'], [216e5, '6h'], [864e5, '24h']]) {
      if (span / iv <= 1500) return name;
    }
    return '168h';
  }

  // ---- search ------------------------------------------------------------

  const count = () => (rows.length === 1 ? '1 event' : rows.length.toLocaleString() + ' events');

  function setStatus(text, err) {
    $('status').textContent = text;
    $('status').classList.toggle('err', !!err);
  }

  async function run() {
    if (search) search.abort();
    stopLive();
    const st = state();
    saveURL(st);
    search = new AbortController();
    const signal = search.signal;
    rows = [];
    open = -1;
    histo = null;
    render();
    drawHisto();
    const now = Date.now();
    const from = parseTime(st.from, now);
    const to = parseTime(st.to, now);
    const args = queryArgs(st);
    const started = performance.now();
    setStatus('searching…');

    const h = new URLSearchParams(args);
    h.set('histogram', from !== null && to !== null ? interval(from, to) : '1m');
    const histoDone = api('/v1/logs?' + h, signal).then((r) => r.json()).then((j) => {
      const f = Date.parse(j.from);
      const iv = j.interval_seconds * 1000;
      const end = j.to ? Date.parse(j.to) : (to ?? now);
      const n = Math.max(1, Math.ceil((end - f) / iv));
      const counts = Array.from({ length: n }, () => ({}));
      for (const b of j.buckets) {
        const i = Math.round((Date.parse(b.ts) - f) / iv);
        if (i >= 0 && i < n) for (const l of LEVELS) if (b[l]) counts[i][l] = b[l];
      }
      histo = { from: f, iv, n, counts };
      drawHisto();
    }).catch((e) => { if (!signal.aborted) setStatus('histogram: ' + e.message, true); });

    args.set('limit', String(LIMIT));
    if (st.desc) args.set('order', 'desc');
    let pending = false, loading = true;
    const flush = () => {
      pending = false;
      if (signal.aborted) return;
      render();
      if (loading) setStatus(count() + ', loading…');
    };
    try {
      const resp = await api('/v1/logs?' + args, signal);
      await ndjson(resp, (o) => {
        if (Object.hasOwn(o, CONTROL)) {
          if (o[CONTROL] === 'error') throw new Error(String(o.error));
          return; // stats, or a kind this page does not know
        }
        rows.push(o);
        if (!pending) { pending = true; requestAnimationFrame(flush); }
      });
      loading = false;
      render();
      const secs = ((performance.now() - started) / 1000).toFixed(2);
      setStatus(count() + ' in ' + secs + ' s' + (rows.length >= LIMIT ? ' (first ' + LIMIT.toLocaleString() + ' shown: narrow the search)' : ''));
    } catch (e) {
      loading = false;
      if (signal.aborted) return;
      render();
      setStatus(e.message, true);
    }
    await histoDone;
    if (!signal.aborted && $('live').checked) startLive();
  }

  // ---- live tail ---------------------------------------------------------

  function stopLive() {
    if (live) live.abort();
    live = null;
    document.querySelector('.live').classList.remove('on');
  }

  async function startLive() {
    stopLive();
    const st = state();
    const ctl = new AbortController();
    live = ctl;
    document.querySelector('.live').classList.add('on');
    const p = new URLSearchParams({ service: st.service });
    if (st.level) p.set('level', st.level);
    let re = null;
    if (st.q && st.re) { try { re = new RegExp(st.q); } catch (_) { re = null; } }
    if (st.q && !st.re) p.set('q', st.q);
    let batch = [];
    let pending = false;
    const flush = () => {
      pending = false;
      const atEnd = st.desc ? results.scrollTop === 0 : results.scrollTop + results.clientHeight >= results.scrollHeight - ROW;
      if (st.desc) { rows = batch.reverse().concat(rows); if (open >= 0) open += batch.length; } else for (const e of batch) rows.push(e);
      batch = [];
      render();
      if (atEnd) results.scrollTop = st.desc ? 0 : results.scrollHeight;
      setStatus(count() + ', live');
    };
    try {
      const resp = await api('/v1/tail?' + p, ctl.signal);
      setStatus(count() + ', live');
      await ndjson(resp, (o) => {
        if (Object.hasOwn(o, CONTROL)) {
          if (o[CONTROL] !== 'dropped') return;
          batch.push({ [MARKER]: o.dropped + ' events dropped: this page fell behind the live stream' });
        } else {
          if (re && !re.test(o.message || '')) return;
          batch.push(o);
          countLive(o);
        }
        if (!pending) { pending = true; requestAnimationFrame(flush); }
      });
      if (live === ctl) setStatus('the live stream ended (server shutting down?)', true);
    } catch (e) {
      if (!ctl.signal.aborted) setStatus('live: ' + e.message, true);
    }
    if (live === ctl) stopLive();
  }

  function countLive(o) {
    if (!histo) return;
    const t = Date.parse(o.ts);
    let i = Math.floor((t - histo.from) / histo.iv);
    if (i < 0) return;
    while (i >= histo.n) { histo.counts.push({}); histo.n++; }
    const l = o.level || 'none';
    histo.counts[i][l] = (histo.counts[i][l] || 0) + 1;
    if (!drawn) { drawn = true; requestAnimationFrame(() => { drawn = false; drawHisto(); }); }
  }

  // ---- results: only the visible rows are in the DOM ----------------------

  const results = $('results');
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  const fmtTS = (ts) => (ts || '').slice(0, 23).replace('T', ' ');
  const yOf = (i) => i * ROW + (open >= 0 && i > open ? openH : 0);

  function indexAt(y) {
    let i = Math.floor(y / ROW);
    if (open >= 0 && i > open) i = Math.max(open, Math.floor((y - openH) / ROW));
    return Math.max(0, Math.min(rows.length - 1, i));
  }

  function detail(e) {
    let h = '<div class="detail"><table>';
    const field = (k, v) => { h += '<tr><td>' + esc(k) + '</td><td>' + esc(typeof v === 'string' ? v : JSON.stringify(v, null, 1)) + '</td></tr>'; };
    for (const k of ['ts', 'level', 'service', 'host', 'id', 'message']) if (e[k] !== undefined && e[k] !== '') field(k, e[k]);
    for (const k of Object.keys(e)) if (!FIXED.has(k)) field(k, e[k]);
    return h + '</table></div>';
  }

  function rowHTML(i) {
    const e = rows[i];
    if (e[MARKER]) return '<div class="row marker" data-i="' + i + '"><span class="msg">' + esc(e[MARKER]) + '</span></div>';
    const lv = e.level || '';
    return '<div class="row' + (i === open ? ' open' : '') + '" data-i="' + i + '"><span class="ts">' + esc(fmtTS(e.ts)) +
      '</span><span class="lv ' + esc(lv) + '">' + esc(lv) + '</span><span class="svc">' + esc(e.service || '') +
      '</span><span class="host">' + esc(e.host || '') + '</span><span class="msg">' + esc(e.message || '') + '</span></div>' +
      (i === open ? detail(e) : '');
  }

  function render() {
    $('spacer').style.height = (rows.length * ROW + (open >= 0 ? openH : 0)) + 'px';
    const box = $('rows');
    if (!rows.length) { box.innerHTML = ''; return; }
    const top = results.scrollTop;
    const first = Math.max(0, indexAt(top) - 5);
    const last = Math.min(rows.length - 1, indexAt(top + results.clientHeight) + 5);
    let h = '';
    for (let i = first; i <= last; i++) h += rowHTML(i);
    box.style.transform = 'translateY(' + yOf(first) + 'px)';
    box.innerHTML = h;
    if (open >= first && open <= last) {
      const d = box.querySelector('.detail');
      const dh = d ? d.offsetHeight : 0;
      if (dh !== openH) { openH = dh; $('spacer').style.height = (rows.length * ROW + openH) + 'px'; }
    }
  }

  results.addEventListener('scroll', () => requestAnimationFrame(render), { passive: true });
  window.addEventListener('resize', () => { render(); drawHisto(); });
  $('rows').addEventListener('click', (ev) => {
    if (ev.target.closest('.detail')) return;
    const r = ev.target.closest('.row');
    if (!r) return;
    const i = +r.dataset.i;
    open = open === i ? -1 : i;
    openH = 0;
    render();
  });

  // ---- histogram ---------------------------------------------------------

  const canvas = $('histo');
  function drawHisto() {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth, hgt = canvas.clientHeight;
    canvas.width = w * dpr;
    canvas.height = hgt * dpr;
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, hgt);
    const legend = $('legend');
    if (!histo) { legend.textContent = ''; return; }
    const axis = 16, top = 16, plotH = hgt - axis - top;
    let max = 0;
    const totals = {};
    for (const c of histo.counts) {
      let s = 0;
      for (const l in c) { s += c[l]; totals[l] = (totals[l] || 0) + c[l]; }
      if (s > max) max = s;
    }
    const bw = w / histo.n;
    for (let i = 0; i < histo.n; i++) {
      let y = top + plotH;
      for (const l of LEVELS) {
        const n = histo.counts[i][l];
        if (!n) continue;
        const bh = Math.max(1, n / max * plotH);
        y -= bh;
        g.fillStyle = COLOR[l];
        g.fillRect(i * bw + (bw > 3 ? 0.5 : 0), y, Math.max(1, bw - (bw > 3 ? 1 : 0)), bh);
      }
    }
    g.fillStyle = '#6b6f76';
    g.font = '11px system-ui, sans-serif';
    g.fillText(max ? max.toLocaleString() + ' / ' + (histo.iv >= 36e5 ? histo.iv / 36e5 + 'h' : histo.iv / 6e4 + 'm') : 'no events', 2, 11);
    const ticks = Math.max(2, Math.floor(w / 140));
    for (let k = 0; k <= ticks; k++) {
      const t = histo.from + (histo.n * histo.iv) * k / ticks;
      const label = new Date(t).toISOString().slice(histo.n * histo.iv > 864e5 ? 5 : 11, 16).replace('T', ' ');
      const x = Math.min(w - 30, Math.max(0, k / ticks * w - 15));
      g.fillText(label, x, hgt - 2);
    }
    legend.innerHTML = LEVELS.filter((l) => totals[l]).map((l) => '<span><i style="background:' + COLOR[l] + '"></i>' + l + ' ' + totals[l].toLocaleString() + '</span>').join('');
  }

  canvas.addEventListener('mousemove', (ev) => {
    const tip = $('tip');
    if (!histo) { tip.hidden = true; return; }
    const i = Math.floor(ev.offsetX / canvas.clientWidth * histo.n);
    const c = histo.counts[i];
    if (!c) { tip.hidden = true; return; }
    const parts = LEVELS.filter((l) => c[l]).map((l) => l + ' ' + c[l]);
    tip.textContent = new Date(histo.from + i * histo.iv).toISOString().slice(0, 16).replace('T', ' ') + '  ' + (parts.join(', ') || 'none');
    tip.style.left = Math.min(ev.offsetX + 14, canvas.clientWidth - 200) + 'px';
    tip.hidden = false;
  });
  canvas.addEventListener('mouseleave', () => { $('tip').hidden = true; });
  canvas.addEventListener('click', (ev) => { // zoom into the clicked bar
    if (!histo) return;
    const i = Math.floor(ev.offsetX / canvas.clientWidth * histo.n);
    $('from').value = new Date(histo.from + i * histo.iv).toISOString();
    $('to').value = new Date(histo.from + (i + 1) * histo.iv).toISOString();
    run();
  });

  // ---- wiring ------------------------------------------------------------

  $('controls').addEventListener('submit', (ev) => { ev.preventDefault(); run(); });
  for (const b of document.querySelectorAll('#quick button')) {
    b.addEventListener('click', () => { $('from').value = b.dataset.from; $('to').value = 'now'; run(); });
  }
  for (const id of ['service', 'level', 're', 'desc']) $(id).addEventListener('change', run);
  $('live').addEventListener('change', () => {
    saveURL(state());
    if ($('live').checked) startLive(); else { stopLive(); setStatus(count()); }
  });

  async function start() {
    loadURL();
    try {
      const resp = await api('/v1/services');
      for (const s of await resp.json()) addService(s);
      loadURL(); // the URL's service, now that the options exist
    } catch (e) {
      setStatus('services: ' + e.message, true);
    }
    run();
  }
  start();
})();
