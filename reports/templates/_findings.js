/* Draws a findings table (render.finding_rows, packed in the table's data-packed attribute) into its tbody.
   links: counts and examples get data-finding attributes (the report's case list filters on them). Text is set with
   textContent only: nothing from a results file becomes markup. */
function qdqFindingsTable(table, rows, links) {
  "use strict";
  var body = table.querySelector("tbody"), limit = Number(table.getAttribute("data-limit") || 60);
  function el(tag, text, cls) { var e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }
  function cut(text, n) {  // at a word boundary
    if (text.length <= n) return text;
    var c = text.slice(0, n), sp = c.lastIndexOf(" ");
    return (sp > n / 2 ? c.slice(0, sp) : c).replace(/[ ,;:]+$/, "") + " …";
  }
  function num(n) { return Number(n).toLocaleString("en-US"); }
  function link(text, f, open, cls) {
    if (!links) return el("span", text, cls);
    var a = el("a", text, cls); a.setAttribute("data-finding", f.n);
    // the report's deep links (#case=ID&form=F, #finding=F...): a click routes through them, so they can be copied
    a.href = open ? "#case=" + qdqEncodeURI(f.example) + "&form=" + qdqEncodeURI(f.example_form)
                  : "#finding=" + f.id;
    if (open) { a.setAttribute("data-open", "1"); a.title = "open this case: inputs, expected vs actual, repro"; } else { a.title = "list these cases"; }
    return a;
  }
  rows.forEach(function (f, k) {
    var tr = el("tr", undefined, "finding " + (f.state === "expected" ? "xfail" : "failed")), td;
    tr.setAttribute("data-finding-id", f.id);
    if (links) tr.id = "finding=" + f.id;
    tr.hidden = k >= limit;
    tr.appendChild(el("td", String(f.n + 1), "num"));
    td = el("td"); td.appendChild(el("b", f.state));
    if (f.state === "partly expected") { td.appendChild(el("br")); td.appendChild(el("span", num(f.count - f.expected) + " new", "small")); }
    if (f.since) { td.appendChild(el("br")); td.appendChild(el("span", f.since, "since")); }
    tr.appendChild(td);
    td = el("td", undefined, "num"); td.appendChild(link(num(f.count), f, false)); tr.appendChild(td);
    td = el("td", undefined, "wrap");  // the plain sentence, then the raw message
    if (f.plain) td.appendChild(el("div", f.plain, "plain"));
    td.appendChild(el("div", f.what, f.plain ? "raw" : ""));
    var ex = el("div", "e.g. ", "small"); ex.appendChild(link(f.example, f, true, "id"));
    ex.appendChild(document.createTextNode(" [" + f.example_form + "] ")); ex.appendChild(el("span", f.id, "fid"));
    td.appendChild(ex); tr.appendChild(td);
    td = el("td", f.operator + " " + f.versions, "wrap");
    if (f.domain !== "ai.onnx") td.appendChild(el("div", f.domain, "small"));
    tr.appendChild(td);
    td = el("td", f.where, "wrap"); td.appendChild(el("div", f.types, "small"));
    if (f.nodes) td.appendChild(el("div", "model nodes: " + f.nodes, "small"));
    tr.appendChild(td);
    td = el("td", undefined, "wrap small");
    f.entries.slice(0, 2).forEach(function (e) {
      var d = el("div", "line " + e.line + ": " + cut(e.reason, 110)); d.title = e.reason;
      if (e.link) { var a = el("a", "link"); a.href = e.link; d.appendChild(document.createTextNode(" ")); d.appendChild(a); }
      td.appendChild(d);
    });
    if (!f.entries.length) td.textContent = "none: new";
    if (f.entries.length > 2) td.appendChild(el("div", "and " + (f.entries.length - 2) + " more"));
    tr.appendChild(td);
    body.appendChild(tr);
  });
  if (rows.length > limit) {
    var b = el("button", "show the other " + (rows.length - limit) + " findings"); b.type = "button";
    b.addEventListener("click", function () { [].forEach.call(body.children, function (tr) { tr.hidden = false; }); b.hidden = true; });
    table.parentNode.insertBefore(b, table.nextSibling);
  }
}
