// Scratch-track players whose render is being made: each polls its render
// (GET /api/renders/{id}) and, once it is done, shows the player and its timeline in
// place, as the page draws them for a render already made; a failure shows its error.
// No reload, no build step.
(function () {
  "use strict";

  var KINDS = ["voice", "music", "sfx"];
  var GIVE_UP_AFTER_MS = 10 * 60 * 1000;

  function element(tag, attributes, text) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) {
      node.setAttribute(name, attributes[name]);
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function seconds(value) {
    return Number(value || 0).toFixed(2);
  }

  function timeline(render) {
    var made = render.timeline || {};
    var length = Number(made.lengthS) || 1;
    var box = element("div", { class: "scratch-timeline", "aria-label": "Timeline" });
    KINDS.forEach(function (kind) {
      var segments = (made.segments || []).filter(function (s) { return s.kind === kind; });
      if (!segments.length) return;
      var row = element("div", { class: "scratch-row " + kind });
      segments.forEach(function (s) {
        var title = s.ref + " " + (s.label || "") + ": " + seconds(s.startS) + "-" +
          seconds(s.endS) + " s";
        var bar = element("span", { class: "bar", title: title }, s.ref);
        bar.style.left = (100 * s.startS / length) + "%";
        bar.style.width = (100 * (s.endS - s.startS) / length) + "%";
        row.appendChild(bar);
      });
      box.appendChild(row);
    });
    return box;
  }

  function showPlayer(player, waiting, render) {
    var made = render.timeline || {};
    var parts = [
      element("audio", { controls: "", preload: "metadata", src: render.audioUrl }),
      timeline(render),
      element("p", { class: "quiet" }, seconds(render.seconds) + " s for a " + made.slotS +
        " s slot; speech ends at " + seconds(made.speechEndS) + " s."),
    ];
    var readers = (made.segments || []).filter(function (s) {
      return s.readBy || s.madeBy;
    });
    if (readers.length) {
      var said = element("ul", { class: "scratch-readers" });
      readers.forEach(function (s) {
        said.appendChild(element("li", {}, s.ref + ": " + (s.readBy || s.madeBy)));
      });
      parts.push(said);
    }
    if ((made.warnings || []).length) {
      var list = element("ul", { class: "scratch-warnings" });
      made.warnings.forEach(function (w) { list.appendChild(element("li", {}, w)); });
      parts.push(list);
    }
    parts.forEach(function (part) { waiting.parentNode.insertBefore(part, waiting); });
    waiting.remove();
    player.dataset.state = "done";
  }

  function showEnd(player, waiting, text) {
    waiting.textContent = text;
    waiting.className = "scratch-warnings";
    player.dataset.state = "failed";
  }

  function follow(player) {
    var waiting = player.querySelector(".scratch-waiting");
    var started = Date.now();
    var delay = 1000;
    function next() {
      if (Date.now() - started > GIVE_UP_AFTER_MS) {
        showEnd(player, waiting, "Still rendering: reload the page later.");
        return;
      }
      setTimeout(check, delay);
      delay = Math.min(delay + 500, 5000);
    }
    function check() {
      fetch(player.dataset.poll, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(function (render) {
          if (render && render.status === "done") showPlayer(player, waiting, render);
          else if (render && render.status === "failed")
            showEnd(player, waiting, "The render failed: " + render.error + " Reload to try again.");
          else next();
        })
        .catch(next);
    }
    next();
  }

  document.querySelectorAll(".scratch-player[data-poll]").forEach(follow);
})();
