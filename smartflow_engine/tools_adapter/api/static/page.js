// smartflow session page: round details on click, a health issue marked in the grid on click,
// and the difference between two rounds (keys, issues, the writes between them and what they
// changed).
(function () {
  "use strict";
  var dataEl = document.getElementById("page-data");
  var data = dataEl ? JSON.parse(dataEl.textContent) : { rounds: [] };
  var byRound = {};
  data.rounds.forEach(function (r) { byRound[r.round] = r; });

  function onActivate(node, fn) {
    node.addEventListener("click", fn);
    node.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); fn(); }
    });
  }

  // ---------------------------------------------------------------- rounds
  document.querySelectorAll(".round").forEach(function (li) {
    onActivate(li, function () {
      var detail = li.querySelector(".round-detail");
      var open = detail.hidden;
      detail.hidden = !open;
      li.classList.toggle("open", open);
    });
  });

  // ---------------------------------------------------------------- issues in the grid
  function clearMarks() {
    document.querySelectorAll("#grid .hl").forEach(function (n) { n.classList.remove("hl"); });
    document.querySelectorAll(".issues li.active").forEach(function (n) {
      n.classList.remove("active");
    });
  }
  document.querySelectorAll(".issues li.issue").forEach(function (li) {
    onActivate(li, function () {
      var was = li.classList.contains("active");
      clearMarks();
      if (was) { return; }
      li.classList.add("active");
      var day = li.getAttribute("data-day"), cat = li.getAttribute("data-category");
      var grid = document.getElementById("grid");
      if (!grid) { return; }
      if (day) {
        grid.querySelectorAll('.cell[data-day="' + day + '"], .dayhead[data-day="' + day + '"]')
          .forEach(function (n) { n.classList.add("hl"); });
      }
      if (cat) {
        grid.querySelectorAll(".block.kind-task, .block.kind-guest").forEach(function (n) {
          var sameDay = !day || n.getAttribute("data-day") === day;
          if (n.getAttribute("data-category") === cat && sameDay) { n.classList.add("hl"); }
        });
      }
    });
  });

  // ---------------------------------------------------------------- two rounds
  function keyText(k) {
    return k ? "严重 " + k[0] + " · 警告 " + k[1] + " · 影响 " + k[2] : "—";
  }
  function signed(x) { return (x > 0 ? "+" : "") + (Math.round(x * 10000) / 10000); }
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    node.textContent = text;
    if (cls) { node.className = cls; }
    return node;
  }
  function showDiff() {
    var a = document.getElementById("diff-a"), b = document.getElementById("diff-b");
    var out = document.getElementById("diff-out");
    if (!a || !b || !out) { return; }
    var ra = byRound[a.value], rb = byRound[b.value];
    out.textContent = "";
    if (!ra || !rb) { return; }
    var lo = Math.min(ra.round, rb.round), hi = Math.max(ra.round, rb.round);
    var from = byRound[lo], to = byRound[hi];
    out.appendChild(el("p", "第 " + lo + " 轮：" + keyText(from.key_before)));
    out.appendChild(el("p", "第 " + hi + " 轮：" + keyText(to.key_before)));
    if (from.key_before && to.key_before) {
      out.appendChild(el("p", "变化：严重 " + signed(to.key_before[0] - from.key_before[0]) +
        " · 警告 " + signed(to.key_before[1] - from.key_before[1]) +
        " · 影响 " + signed(to.key_before[2] - from.key_before[2]), "diff-key"));
    }
    var before = new Set(from.issue_ids), after = new Set(to.issue_ids);
    var gone = from.issue_ids.filter(function (i) { return !after.has(i); });
    var added = to.issue_ids.filter(function (i) { return !before.has(i); });
    var kept = to.issue_ids.filter(function (i) { return before.has(i); });
    out.appendChild(el("p", "已解决：" + (gone.join("、") || "无") + "；新出现：" +
      (added.join("、") || "无") + "；仍存在：" + (kept.join("、") || "无"), "diff-issues"));

    // the writes of rounds lo .. hi-1 ran after round lo's health check and before round hi's
    var ul = el("ul", "", "diff-writes");
    var net = {}, order = [], unknown = 0, omitted = 0;
    data.rounds.forEach(function (r) {
      if (r.round < lo || r.round >= hi) { return; }
      omitted += r.writes_omitted || 0;
      r.writes.forEach(function (w) {
        ul.appendChild(el("li", "第 " + r.round + " 轮 " + w.tool +
          (w.evidence ? "：" + w.evidence : "")));
        if (!w.moves) { unknown += 1; return; }
        w.moves.forEach(function (m) {
          if (!net[m.task_id]) { net[m.task_id] = { name: m.name, before: m.before }; order.push(m.task_id); }
          net[m.task_id].after = m.after;
        });
      });
    });
    out.appendChild(el("p", "其间的写入（" + ul.children.length + " 次）："));
    out.appendChild(ul);
    var moved = order.filter(function (id) { return net[id].before !== net[id].after; });
    var mv = el("ul", "", "diff-moves");
    moved.forEach(function (id) {
      var m = net[id];
      mv.appendChild(el("li", "[" + id + "] " + m.name + "：" + m.before + " → " + m.after));
    });
    out.appendChild(el("p", "日程的净变化（" + moved.length + " 个任务）：", "diff-net"));
    out.appendChild(mv);
    if (unknown || omitted) {
      out.appendChild(el("p", "另有 " + (unknown + omitted) +
        " 次写入的改动已提交或不在变更记录中，未计入上面的净变化。", "hint"));
    }
  }
  var a = document.getElementById("diff-a"), b = document.getElementById("diff-b");
  if (a && b) {
    b.value = b.getAttribute("data-last");
    a.addEventListener("change", showDiff);
    b.addEventListener("change", showDiff);
    showDiff();
  }
})();
