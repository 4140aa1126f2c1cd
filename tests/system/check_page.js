// check_page.js - appended to a copy of a kval report page by report_browser_test.sh: once the
// page and its images have loaded, measure what a reader sees at a 1280-pixel window and put
// the findings into document.title, which `chromium --dump-dom` prints.
window.addEventListener("load", function () {
  var problems = [];
  var first = document.querySelector("h2");
  if (!first || first.textContent !== "Verdict") problems.push("first section is not the verdict");
  var banner = document.querySelector(".verdict");
  if (!banner) problems.push("no verdict banner");
  else if (banner.getBoundingClientRect().top > window.innerHeight / 3) problems.push("verdict not at the top");
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    problems.push("page wider than the window: " + document.documentElement.scrollWidth + " px");
  var bodyWidth = document.body.getBoundingClientRect().width;
  document.querySelectorAll("table").forEach(function (t, i) {
    var box = t.parentElement;
    if (!box.classList.contains("scroll")) problems.push("table " + i + " is not in a scrolling box");
    else if (box.getBoundingClientRect().width > bodyWidth + 1) problems.push("table " + i + " box wider than the page");
  });
  document.querySelectorAll("img").forEach(function (img) {
    if (!img.complete || img.naturalWidth === 0) problems.push("image not loaded: " + img.getAttribute("src"));
    else if (img.getBoundingClientRect().width > bodyWidth + 1) problems.push("image wider than the page");
  });
  document.title = problems.length ? "PAGE-PROBLEMS: " + problems.join("; ") : "PAGE-OK " +
    document.querySelectorAll("table").length + " tables, " + document.querySelectorAll("img").length + " images";
});
