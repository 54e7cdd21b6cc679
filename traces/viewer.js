// isrcheck trace viewer: draws one step of the embedded trace at a time.
// Every string from the trace goes through textContent, never innerHTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trace-data").textContent);
  var steps = data.steps;
  var last = steps.length - 1;
  var lostLabels = {};
  data.lost.forEach(function (r) { lostLabels[r.label] = true; });
  // Pale fills per leader epoch, so records written in different epochs differ at a glance.
  var EPOCH_FILL = ["#d6e6ff", "#d5f5df", "#ffeab8", "#ecdcff", "#ffdbe2", "#c9f2ec", "#e2e5ff", "#f7dcf5", "#e6f6c9"];
  var current = 0;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function isr(list) { return "{" + list.join(", ") + "}"; }
  function opt(v) { return v === null || v === undefined ? "-" : String(v); }
  function fact(parent, label, value, changed) {
    parent.appendChild(document.createTextNode(label + " "));
    var b = el("b", changed ? "chg" : "", value);
    parent.appendChild(b);
    parent.appendChild(document.createTextNode("  "));
  }
  function fill(epoch) { return EPOCH_FILL[epoch % EPOCH_FILL.length]; }

  function header() {
    document.getElementById("title").textContent = "isrcheck trace: " + data.title;
    document.getElementById("summary").textContent = data.summary;
    document.getElementById("doc").textContent = data.property ? data.property + ": " + data.doc : "";
    var verdict = document.getElementById("verdict");
    if (data.outcome) {
      verdict.hidden = false;
      verdict.className = data.outcome;
      var what = data.headline;
      if (data.lost.length) what += ": lost " + data.lost.map(function (r) { return r.label; }).join(", ");
      document.getElementById("verdict-text").textContent = what;
      document.getElementById("go-final").textContent = "show step " + last;
      document.getElementById("verdict-explanation").textContent = data.explanation;
    }
    var legend = "Boxes are records (id@epoch), coloured by leader epoch; solid: below the broker's HWM (the blue bar), "
      + "dashed: above it; empty slots are past the log end (LEO). Green ring: appended at this step; red strike: truncated "
      + "at this step; yellow: changed since the previous step.";
    if (data.lost.length) legend += " Red outline: the lost record.";
    document.getElementById("legend").textContent = legend;
  }

  function timeline() {
    var ol = document.getElementById("timeline");
    steps.forEach(function (s, i) {
      var li = el("li");
      li.appendChild(el("span", "n", i));
      li.appendChild(el("span", "t", s.short));
      li.title = s.sentence;
      li.dataset.step = String(i);
      if (i === last && data.outcome === "violated") li.classList.add("failing");
      if (i === last && data.outcome === "witnessed") li.classList.add("witness");
      if (data.lasso && i >= data.lasso.loop) li.classList.add("loop");  // the steps the run repeats
      if (data.lasso && i === data.lasso.trigger) li.classList.add("trigger");
      li.addEventListener("click", function () { show(i); });
      ol.appendChild(li);
    });
  }

  function slot(rec, cls) {
    var box = el("div", "slot rec " + (cls || ""), rec.label);
    box.style.background = fill(rec.epoch);
    if (lostLabels[rec.label]) box.classList.add("lost");
    return box;
  }

  function lane(r, s, atEnd) {
    var row = el("div", "lane" + (r.alive ? "" : " crashed"));
    row.setAttribute("role", "row");
    row.dataset.broker = String(r.broker);
    var who = el("div", "who");
    var top = el("div", "who-top");
    top.appendChild(el("span", "broker", "broker " + r.broker));
    var role = el("span", "badge " + r.role.replace(" ", "-"), r.role);
    if (r.changed.indexOf("role") >= 0 || r.changed.indexOf("alive") >= 0) role.classList.add("chg");
    top.appendChild(role);
    top.appendChild(el("span", "badge " + (r.inQuorumIsr ? "isr" : "out"), r.inQuorumIsr ? "in ISR" : "not in ISR"));
    who.appendChild(top);
    var facts = el("div", "facts");
    if (r.alive) {
      fact(facts, "leader", opt(r.leader), r.changed.indexOf("leader") >= 0);
      fact(facts, "epoch", opt(r.epoch), r.changed.indexOf("epoch") >= 0);
      fact(facts, "ISR", isr(r.isr), r.changed.indexOf("isr") >= 0);
    } else {
      facts.appendChild(document.createTextNode("down: in-memory state lost  "));
    }
    var facts2 = el("div", "facts");
    fact(facts2, "LEO", r.leo, r.changed.indexOf("leo") >= 0);
    fact(facts2, "HWM", r.hw, r.changed.indexOf("hw") >= 0);
    who.appendChild(facts);
    who.appendChild(facts2);
    row.appendChild(who);

    var log = el("div", "log");
    for (var o = 0; o < data.logSize; o++) {
      if (o < r.log.length) {
        var rec = r.log[o];
        var box = slot(rec, o < r.hw ? "below" : "above");
        if (r.appended.indexOf(o) >= 0) { box.classList.add("appended"); box.appendChild(el("span", "tag new", "NEW")); }
        log.appendChild(box);
      } else {
        log.appendChild(el("div", "slot empty"));
      }
    }
    if (r.dropped.length) {
      log.appendChild(el("div", "gap"));
      r.dropped.forEach(function (rec) {
        var box = el("div", "slot dropped", rec.label);
        box.title = "truncated at this step";
        if (lostLabels[rec.label]) { box.classList.add("lost"); box.appendChild(el("span", "tag", "LOST")); }
        log.appendChild(box);
      });
      log.appendChild(el("span", "dropped-note", r.alive ? "truncated" : "wiped with the disk"));
    }
    // At the failing step, a record this broker should hold and lacks (unless this very step dropped it).
    var dropped = r.dropped.map(function (x) { return x.label; });
    var missing = !atEnd ? [] : data.missing.filter(function (m) {
      return m.broker === r.broker && dropped.indexOf(m.record.label) < 0;
    });
    if (atEnd && data.missing.some(function (m) { return m.broker === r.broker; })) row.classList.add("lacking");
    if (missing.length) {
      log.appendChild(el("div", "gap"));
      missing.forEach(function (m) {
        var ghost = el("div", "slot missing lost", m.record.label);
        ghost.title = "broker " + r.broker + " should hold " + m.record.label + " and does not";
        ghost.appendChild(el("span", "tag", "MISSING"));
        log.appendChild(ghost);
      });
    }
    var bar = el("div", "hwm" + (r.changed.indexOf("hw") >= 0 ? " chg" : ""));
    bar.style.left = "calc(4px + " + Math.min(r.hw, data.logSize) + " * (var(--slot) + var(--gap)) - var(--gap) / 2 + 3px)";
    bar.title = "high watermark " + r.hw;
    bar.appendChild(el("span", "", "HWM " + r.hw));
    log.appendChild(bar);
    row.appendChild(log);
    return row;
  }

  function offsets() {
    var row = el("div", "lane offsets");
    row.appendChild(el("div", "", "offset"));
    var log = el("div", "log");
    log.style.minHeight = "0";
    for (var o = 0; o < data.logSize; o++) log.appendChild(el("div", "offset", o));
    row.appendChild(log);
    return row;
  }

  function cards(s) {
    var q = document.getElementById("quorum");
    q.textContent = "";
    q.appendChild(el("h3", "", "Controller (quorum state)"));
    var line = el("div", "facts");
    fact(line, "leader", opt(s.quorum.leader), s.quorum.changed.indexOf("leader") >= 0);
    fact(line, "epoch", opt(s.quorum.epoch), s.quorum.changed.indexOf("epoch") >= 0);
    fact(line, "ISR", isr(s.quorum.isr), s.quorum.changed.indexOf("isr") >= 0);
    q.appendChild(line);

    var rq = document.getElementById("requests");
    rq.textContent = "";
    rq.appendChild(el("h3", "", "LeaderAndIsr requests sent"));
    if (!s.requests.length) rq.appendChild(el("div", "facts", "none yet"));
    var ul = el("ul");
    s.requests.forEach(function (text, i) {
      var isNew = s.newRequest && i === s.requests.length - 1;
      ul.appendChild(el("li", isNew ? "new" : "", text + (isNew ? "  (new)" : "")));
    });
    rq.appendChild(ul);

    var h = document.getElementById("history");
    h.textContent = "";
    if (!s.histories.length && !s.counters.length) { h.hidden = true; return; }
    h.hidden = false;
    h.appendChild(el("h3", "", "Producer and consumers"));
    s.histories.forEach(function (x) {
      var div = el("div", "facts");
      div.appendChild(document.createTextNode(x.label + ": "));
      if (!x.ids.length) div.appendChild(el("span", "", "none"));
      x.ids.forEach(function (id) {
        var isNew = x.new.indexOf(id) >= 0;
        div.appendChild(el("b", isNew ? "chg" : "", (isNew ? "+" : "") + "m" + id));
        div.appendChild(document.createTextNode(" "));
      });
      h.appendChild(div);
    });
    if (s.counters.length) {
      var c = el("div", "facts");
      s.counters.forEach(function (x) { fact(c, x.label, x.used + "/" + x.allowed, x.changed); });
      h.appendChild(c);
    }
  }

  function show(i) {
    current = Math.max(0, Math.min(last, i));
    var s = steps[current];
    var atEnd = current === last;
    document.getElementById("step-label").textContent = "step " + current + " / " + last;
    document.getElementById("action").textContent = s.action;
    document.getElementById("sentence").textContent = s.sentence;
    var head = document.getElementById("step-head");
    var here = document.getElementById("here");
    head.className = "";
    here.hidden = true;
    if (atEnd && data.outcome) {
      head.className = data.outcome === "violated" ? "failing" : "witness";
      here.hidden = false;
      here.textContent = (data.lasso ? "\u2717 " + data.lasso.ending + ": "
                          : data.outcome === "violated" ? "\u2717 " + data.property + " is violated here: "
                          : "\u2713 " + data.property + " is witnessed here: ") + data.explanation;
    }
    var lanes = document.getElementById("lanes");
    lanes.textContent = "";
    lanes.appendChild(offsets());
    s.replicas.forEach(function (r) { lanes.appendChild(lane(r, s, atEnd)); });
    cards(s);
    document.getElementById("first").disabled = current === 0;
    document.getElementById("prev").disabled = current === 0;
    document.getElementById("next").disabled = atEnd;
    document.getElementById("last").disabled = atEnd;
    var items = document.getElementById("timeline").children;
    for (var k = 0; k < items.length; k++) {
      items[k].classList.toggle("current", k === current);
      items[k].classList.toggle("past", k < current);
    }
    // Keep the current action in sight by scrolling the timeline only, never the page.
    var list = document.getElementById("timeline");
    var item = items[current];
    if (item) {
      var top = item.offsetTop;  // the list is the items' offset parent (position: relative)
      if (top < list.scrollTop) list.scrollTop = top;
      else if (top + item.offsetHeight > list.scrollTop + list.clientHeight) list.scrollTop = top + item.offsetHeight - list.clientHeight;
    }
    if (history.replaceState) history.replaceState(null, "", "#step=" + current);
    document.body.dataset.step = String(current);
  }

  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var moves = { ArrowRight: current + 1, ArrowDown: current + 1, j: current + 1, n: current + 1,
                  ArrowLeft: current - 1, ArrowUp: current - 1, k: current - 1, p: current - 1,
                  Home: 0, End: last };
    if (Object.prototype.hasOwnProperty.call(moves, e.key)) {
      e.preventDefault();
      show(moves[e.key]);
    }
  }

  header();
  timeline();
  document.getElementById("first").addEventListener("click", function () { show(0); });
  document.getElementById("prev").addEventListener("click", function () { show(current - 1); });
  document.getElementById("next").addEventListener("click", function () { show(current + 1); });
  document.getElementById("last").addEventListener("click", function () { show(last); });
  document.getElementById("go-final").addEventListener("click", function () { show(last); });
  document.addEventListener("keydown", onKey);
  var m = /^#step=(\d+)$/.exec(location.hash);
  // a counterexample or a witness opens where it is decided (Home goes back to the start)
  show(m ? parseInt(m[1], 10) : data.outcome ? last : 0);
})();
