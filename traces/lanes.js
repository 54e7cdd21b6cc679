// isrcheck trace viewer: the producer's and the consumer's lanes, below the brokers' (viewer.js draws
// them with isrcheckLanes). Every string from the trace goes through textContent, never innerHTML.
var isrcheckLanes = (function () {
  "use strict";
  var NAMES = { producer: "producer", consumer: "consumer" };
  // The overview's one-letter marks of each lane's events.
  var MARKS = {
    "sent": "S", "answered": "A", "timed out": "T", "retried": "R", "duplicate dropped": "D",
    "fetched": "F", "processed": "P", "committed": "C", "crashed": "\u00D7", "offset reset": "O"
  };
  var KEYS = {
    producer: "prod: the producer's events: S sent, A answered, T timed out, R retried, D duplicate dropped.",
    consumer: "cons: the consumer's events: F fetched, P processed, C committed, \u00D7 crashed, O offset reset."
  };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // One value: an id set as chips (green ring: joined the set at this step, red strike: left it), else its text.
  function fact(f) {
    var box = el("span", "cfact");
    box.dataset.key = f.key;
    box.appendChild(el("span", "k", f.label));
    if (f.ids === null) {
      box.appendChild(el("b", f.changed ? "v chg" : "v", f.text));
      return box;
    }
    if (!f.ids.length && !f.removed.length) box.appendChild(el("span", "none", "none"));
    f.ids.forEach(function (id) {
      var joined = f.added.indexOf(id) >= 0;
      var chip = el("span", "rid" + (joined ? " added" : ""), "m" + id);
      if (joined) chip.title = "m" + id + " joined " + f.label + " at this step";
      box.appendChild(chip);
    });
    f.removed.forEach(function (id) {
      var chip = el("span", "rid removed", "m" + id);
      chip.title = "m" + id + " left " + f.label + " at this step";
      box.appendChild(chip);
    });
    return box;
  }

  function lane(l, first) {
    var row = el("div", "lane client " + l.name + (first ? " first" : "") + (l.event ? " acted" : ""));
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", NAMES[l.name]);
    row.dataset.lane = l.name;
    var who = el("div", "who");
    var top = el("div", "who-top");
    top.appendChild(el("span", "broker", NAMES[l.name]));
    if (l.event) top.appendChild(el("span", "badge event chg", l.event.kind));
    who.appendChild(top);
    if (l.event) who.appendChild(el("div", "facts event-text", l.event.text));
    row.appendChild(who);
    var facts = el("div", "client-facts");
    l.facts.forEach(function (f) { facts.appendChild(fact(f)); });
    row.appendChild(facts);
    return row;
  }

  // The lanes of step s, appended to the brokers' (container: #lanes).
  function draw(container, s) {
    (s.lanes || []).forEach(function (l, i) { container.appendChild(lane(l, i === 0)); });
  }

  // The overview's rows: one per lane, its event's mark at each step (viewer.js's overviewRow draws them).
  function overviewRows(steps) {
    var names = steps.length && steps[0].lanes ? steps[0].lanes.map(function (l) { return l.name; }) : [];
    return names.map(function (name, k) {
      return {
        who: name === "producer" ? "prod" : "cons", what: "event", kind: name, group: true, flag: true,
        tip: "the " + name + "'s event at each step",
        cell: function (s) {
          var ev = s.lanes[k].event;
          var what = ev ? ev.kind + ": " + ev.text : "nothing happens to it";
          return { text: ev ? MARKS[ev.kind] || "?" : "", cls: ev ? "ev" : "",
                   title: "step " + s.index + ", " + name + ": " + what };
        }
      };
    });
  }

  function legend(data) {
    if (!data.laneNames || !data.laneNames.length) return "";
    var lanes = data.laneNames.join(" and ") + (data.laneNames.length > 1 ? " lanes" : " lane");
    return " The " + lanes + ": record ids (m0, m1, ...) in each set; green ring: joined "
      + "the set at this step, red strike: left it; the yellow badge names what the step did to the "
      + data.laneNames.join(" or ") + ".";
  }

  function overviewKey(data) {
    return (data.laneNames || []).map(function (n) { return " " + KEYS[n]; }).join("");
  }

  return { draw: draw, overviewRows: overviewRows, legend: legend, overviewKey: overviewKey };
})();
