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
    document.getElementById("legend").textContent = legend + isrcheckLanes.legend(data);  // and the lanes' (lanes.js)
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

  // ---- the overview: every step at once, one column per step -----------------------------
  var ROLE_MARK = { "leader": "L", "stale leader": "S", "follower": "F", "crashed": "\u00D7", "no role": "" };
  var columns = [];  // columns[i]: the overview's cells of step i, so its highlight can follow the step shown
  var marked = null;  // the column highlighted now

  function brokerTitle(s, r) {
    return "step " + s.index + ", broker " + r.broker + ": HWM " + r.hw + ", LEO " + r.leo + ", " + r.role
      + (r.inQuorumIsr ? ", in" : ", not in") + " the controller's ISR " + isr(s.quorum.isr);
  }
  function controllerTitle(s) {
    return "step " + s.index + ", controller: " + (s.quorum.leader === null ? "no leader" : "leader " + s.quorum.leader)
      + ", epoch " + opt(s.quorum.epoch) + ", ISR " + isr(s.quorum.isr);
  }

  // The overview's rows: a label, its tooltip, and what the row's cell says at a step.
  function overviewRows() {
    var rows = [];
    steps[0].replicas.forEach(function (_, b) {
      var at = function (s) { return s.replicas[b]; };
      var down = function (s) { return at(s).alive ? "" : "down"; };
      var who = "b" + b;
      rows.push({ who: who, what: "HWM", kind: "hw", broker: b, tip: "broker " + b + "'s high watermark",
                  cell: function (s) { return { text: at(s).hw, cls: down(s), title: brokerTitle(s, at(s)) }; } });
      rows.push({ who: who, what: "LEO", kind: "leo", broker: b, tip: "broker " + b + "'s log end offset",
                  cell: function (s) { return { text: at(s).leo, cls: down(s), title: brokerTitle(s, at(s)) }; } });
      rows.push({ who: who, what: "ISR", kind: "isr", broker: b, flag: true,
                  tip: "broker " + b + ": blue while in the controller's ISR; L leader, S stale leader, F follower, \u00D7 down",
                  cell: function (s) {
                    var r = at(s);
                    return { text: ROLE_MARK[r.role], title: brokerTitle(s, r),
                             cls: (r.inQuorumIsr ? "in " : "") + "r-" + r.role.replace(/ /g, "-") };
                  } });
    });
    rows.push({ who: "ctl", what: "leader", kind: "leader", tip: "the controller's partition leader",
                cell: function (s) { return { text: opt(s.quorum.leader), cls: "", title: controllerTitle(s) }; } });
    rows.push({ who: "ctl", what: "epoch", kind: "epoch", tip: "the controller's leader epoch",
                cell: function (s) { return { text: opt(s.quorum.epoch), cls: "", title: controllerTitle(s) }; } });
    return rows.concat(isrcheckLanes.overviewRows(steps));  // the producer's and the consumer's events
  }

  // The marks above a step's number: the deciding step, and a lasso's trigger and loop start.
  function stepMarks(i) {
    var marks = [];
    if (data.lasso && i === data.lasso.trigger) marks.push(["\u25C6", "from step " + i + " on, the property's goal never holds"]);
    if (data.lasso && i === data.lasso.loop) marks.push(["\u21BA", "the loop starts here: " + data.lasso.ending]);
    if (i === last && data.outcome === "violated") marks.push(["\u2717", data.property + " is violated here"]);
    if (i === last && data.outcome === "witnessed") marks.push(["\u2713", data.property + " is witnessed here"]);
    return marks;
  }

  function overviewHead(head) {
    var marks = el("tr", "marks"), numbers = el("tr", "steps");
    marks.appendChild(el("th", "row"));
    numbers.appendChild(el("th", "row", "step"));
    steps.forEach(function (s, i) {
      var found = stepMarks(i);
      var mark = el("td", data.outcome === "witnessed" ? "ok" : "", found.map(function (m) { return m[0]; }).join(""));
      mark.title = found.map(function (m) { return m[1]; }).join("; ");
      var th = el("th", "", i);
      th.scope = "col";
      th.title = "show step " + i + ": " + s.short;
      if (i === last && data.outcome) th.classList.add(data.outcome === "violated" ? "fail" : "witness");
      if (data.lasso && i >= data.lasso.loop) th.classList.add("loop");
      [mark, th].forEach(function (c) { c.dataset.step = String(i); columns[i].push(c); });
      marks.appendChild(mark);
      numbers.appendChild(th);
    });
    head.appendChild(marks);
    head.appendChild(numbers);
  }

  function overviewRow(row) {
    var first = row.kind === "hw" || row.kind === "leader" || row.group;  // a broker's, the controller's, a lane's first row
    var tr = el("tr", first ? "group" : "");
    tr.dataset.kind = row.kind;
    if (row.broker !== undefined) tr.dataset.broker = String(row.broker);
    var label = el("th", "row");
    label.scope = "row";
    label.title = row.tip;
    label.appendChild(el(first ? "b" : "span", first ? "" : "again", row.who));
    label.appendChild(document.createTextNode(" " + row.what));
    tr.appendChild(label);
    var before = null;
    steps.forEach(function (s, i) {
      var c = row.cell(s);
      var td = el("td", c.cls, c.text);
      if (!row.flag && before !== null && String(c.text) !== before) td.classList.add("chg");
      before = String(c.text);
      td.title = c.title;
      td.dataset.step = String(i);
      columns[i].push(td);
      tr.appendChild(td);
    });
    return tr;
  }

  function overview() {
    var table = document.getElementById("overview");
    var head = el("thead"), body = el("tbody");
    steps.forEach(function () { columns.push([]); });
    overviewHead(head);
    overviewRows().forEach(function (row) { body.appendChild(overviewRow(row)); });
    table.appendChild(head);
    table.appendChild(body);
    table.addEventListener("click", function (e) {
      var cell = e.target.closest("[data-step]");
      if (cell) show(parseInt(cell.dataset.step, 10));
    });
    var key = "One column per step: click one to show it. Per broker (b0, b1, ...) its HWM and LEO (grey while down) "
      + "and ISR: blue while the controller has it in the ISR; L leader, S stale leader (believes it leads), F follower, "
      + "\u00D7 down. ctl: the controller's leader and epoch. Yellow: changed at that step.";
    if (data.outcome === "violated") key += " \u2717 the violating step.";
    if (data.outcome === "witnessed") key += " \u2713 the witnessing step.";
    if (data.lasso) key += " \u25C6 the goal never holds from here; \u21BA the loop starts here (underlined: the loop).";
    document.getElementById("overview-key").textContent = key + isrcheckLanes.overviewKey(data);
    // the timeline below it keeps to the window's height
    var box = document.getElementById("overview-box");
    document.documentElement.style.setProperty("--overview-h", box.offsetHeight + 12 + "px");
  }

  // Highlight the current step's column and keep it in sight, scrolling the overview sideways, never the page.
  function markOverview() {
    if (marked !== null) columns[marked].forEach(function (c) { c.classList.remove("cur"); });
    columns[current].forEach(function (c) { c.classList.add("cur"); });
    marked = current;
    var box = document.getElementById("overview-scroll");
    var cell = columns[current][1];
    var labels = document.querySelector("#overview th.row").offsetWidth;  // sticky: they cover the left edge
    var left = cell.getBoundingClientRect().left - box.getBoundingClientRect().left + box.scrollLeft;
    if (left - labels < box.scrollLeft) box.scrollLeft = left - labels;
    else if (left + cell.offsetWidth > box.scrollLeft + box.clientWidth) box.scrollLeft = left + cell.offsetWidth - box.clientWidth;
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
      if (r.asks) fact(facts, "asks", r.asks, r.changed.indexOf("asks") >= 0);
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
    if (s.quorum.elr !== null) fact(line, "ELR", isr(s.quorum.elr), s.quorum.changed.indexOf("elr") >= 0);
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
    h.appendChild(el("h3", "", s.lanes.length ? "Records and faults" : "Producer and consumers"));
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
    isrcheckLanes.draw(lanes, s);  // the producer's and the consumer's lanes (lanes.js)
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
    markOverview();
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
  overview();
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
