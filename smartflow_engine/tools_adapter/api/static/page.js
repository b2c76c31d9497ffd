// smartflow session page: round details on click and the difference between two rounds.
(function () {
  "use strict";
  var dataEl = document.getElementById("page-data");
  var data = dataEl ? JSON.parse(dataEl.textContent) : { rounds: [] };
  var byRound = {};
  data.rounds.forEach(function (r) { byRound[r.round] = r; });

  function toggle(li) {
    var detail = li.querySelector(".round-detail");
    var open = detail.hidden;
    detail.hidden = !open;
    li.classList.toggle("open", open);
  }
  document.querySelectorAll(".round").forEach(function (li) {
    li.addEventListener("click", function () { toggle(li); });
    li.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(li); }
    });
  });

  function keyText(k) {
    return k ? "严重 " + k[0] + " · 警告 " + k[1] + " · 影响 " + k[2] : "—";
  }
  function el(tag, text) {
    var node = document.createElement(tag);
    node.textContent = text;
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
    var before = new Set(from.issue_ids), after = new Set(to.issue_ids);
    var gone = from.issue_ids.filter(function (i) { return !after.has(i); });
    var added = to.issue_ids.filter(function (i) { return !before.has(i); });
    var kept = to.issue_ids.filter(function (i) { return before.has(i); });
    out.appendChild(el("p", "第 " + lo + " 轮：" + keyText(from.key_before)));
    out.appendChild(el("p", "第 " + hi + " 轮：" + keyText(to.key_before)));
    var p = el("p", "已解决：" + (gone.join("、") || "无") + "；新出现：" + (added.join("、") || "无") +
      "；仍存在：" + (kept.join("、") || "无"));
    p.className = "diff-issues";
    out.appendChild(p);
    var ul = document.createElement("ul");
    ul.className = "diff-writes";
    data.rounds.forEach(function (r) {
      if (r.round < lo || r.round >= hi) { return; }
      r.writes.forEach(function (w) {
        ul.appendChild(el("li", "第 " + r.round + " 轮 " + w.tool + (w.evidence ? "：" + w.evidence : "")));
      });
    });
    out.appendChild(el("p", "其间的写入（" + ul.children.length + " 次）："));
    out.appendChild(ul);
  }
  var a = document.getElementById("diff-a"), b = document.getElementById("diff-b");
  if (a && b) {
    b.value = b.getAttribute("data-last");
    a.addEventListener("change", showDiff);
    b.addEventListener("change", showDiff);
    showDiff();
  }
})();
