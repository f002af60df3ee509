// api_tracer's report: sortable and filterable tables, switches between
// panes, and links that open the <details> they point at. Inlined into the
// page (report/page.py), allowed by its hash; it reads the page only, loads
// nothing, and writes text, never markup.
"use strict";
document.documentElement.classList.add("js");

// -- sorting: a header click sorts by its column; again, the other way --------
function cellValue(row, index, numeric) {
  const cell = row.cells[index];
  const v = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent;
  return numeric ? parseFloat(v) : v.toLowerCase();
}

function sortTable(th) {
  const table = th.closest("table");
  const index = th.cellIndex;
  const numeric = th.dataset.type === "num";
  const first = numeric ? "descending" : "ascending";  // counts: largest first
  const order = th.getAttribute("aria-sort") === first ? (numeric ? "ascending" : "descending") : first;
  for (const other of th.parentNode.cells) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", order);
  const sign = order === "ascending" ? 1 : -1;
  const body = table.tBodies[0];
  const rows = Array.from(body.rows).map((row, i) => [cellValue(row, index, numeric), i, row]);
  rows.sort((a, b) => (a[0] < b[0] ? -sign : a[0] > b[0] ? sign : a[1] - b[1]));  // stable
  for (const [, , row] of rows) body.appendChild(row);
}

for (const th of document.querySelectorAll("table.sortable th")) {
  th.addEventListener("click", () => sortTable(th));
  th.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortTable(th); }
  });
}

// -- filtering: rows whose text holds every word of the box --------------------
function filterTable(input) {
  const table = document.getElementById(input.dataset.table);
  const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const row of table.tBodies[0].rows) {
    const text = row.textContent.toLowerCase();
    const keep = words.every((w) => text.includes(w));
    row.hidden = !keep;
    if (keep) shown += 1;
  }
  const count = document.querySelector(`[data-count="${input.dataset.table}"]`);
  count.textContent = `${shown} of ${table.tBodies[0].rows.length} ${count.dataset.noun}`;
}

for (const input of document.querySelectorAll("input.filter")) {
  input.addEventListener("input", () => filterTable(input));
}

// -- switches: one pane of a group shows at a time ------------------------------
function showPane(button) {
  const group = button.dataset.group;
  for (const b of document.querySelectorAll(`button[data-group="${group}"]`)) {
    b.setAttribute("aria-selected", b === button ? "true" : "false");
  }
  for (const pane of document.querySelectorAll(`.pane[data-group="${group}"]`)) {
    pane.classList.toggle("shown", pane.id === button.dataset.pane);
  }
}

for (const button of document.querySelectorAll("button[data-pane]")) {
  button.addEventListener("click", () => showPane(button));
}

// -- links to a <details>: open it, and the panes around it ---------------------
function reveal(id) {
  const target = id && document.getElementById(id);
  if (!target) return;
  for (let node = target; node; node = node.parentElement) {
    if (node.tagName === "DETAILS") node.open = true;
    if (node.classList && node.classList.contains("pane") && !node.classList.contains("shown")) {
      showPane(document.querySelector(`button[data-pane="${node.id}"]`));
    }
  }
  target.scrollIntoView();
}

document.addEventListener("click", (e) => {
  const link = e.target.closest('a[href^="#"]');
  if (link) reveal(decodeURIComponent(link.getAttribute("href").slice(1)));
});
window.addEventListener("hashchange", () => reveal(decodeURIComponent(location.hash.slice(1))));
reveal(decodeURIComponent(location.hash.slice(1)));
