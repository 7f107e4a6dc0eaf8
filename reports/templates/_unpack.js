/* The report's data: JSON, gzip-compressed, base64 (keeps a 10,000-case report small). The element `id` holds the
   main data; elements with a data-packed attribute (the findings tables) hold more, decoded alongside and handed to
   `use` as [element, value] pairs. */
function qdqDecode(text) {
  "use strict";
  var bin = atob(text.trim()), bytes = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text()
    .then(function (t) { return JSON.parse(t); });
}
function qdqUnpack(id, use) {
  "use strict";
  var packed = [].slice.call(document.querySelectorAll("[data-packed]"));
  var texts = [document.getElementById(id).textContent].concat(packed.map(function (e) { return e.getAttribute("data-packed"); }));
  Promise.all(texts.map(qdqDecode))
    .then(function (all) {
      use(all[0], packed.map(function (e, k) { return [e, all[k + 1]]; }));
      document.body.setAttribute("data-ready", "1");
    })
    .catch(function (e) {
      var p = document.createElement("p");
      p.textContent = "This browser could not read the report's embedded data (" + e + "); it needs DecompressionStream.";
      document.body.insertBefore(p, document.body.firstChild);
    });
}
/* Deep links: a case id from a results file may hold a lone surrogate, which encodeURIComponent refuses (it
   throws), and a fragment typed or cut by hand may be malformed percent-encoding, which decodeURIComponent refuses:
   neither may stop a page. */
function qdqWellFormed(s) {
  "use strict";
  s = String(s);
  return s.toWellFormed ? s.toWellFormed() : s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|([^\uD800-\uDBFF]|^)[\uDC00-\uDFFF]/g, "$1\uFFFD");
}
function qdqEncodeURI(s) {
  "use strict";
  return encodeURIComponent(qdqWellFormed(s));
}
function qdqDecodeURI(s) {
  "use strict";
  try { return decodeURIComponent(s); } catch (e) { return s; }
}
