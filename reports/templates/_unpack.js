/* The report's data: JSON, gzip-compressed, base64 (keeps a 10,000-case report small). */
function qdqUnpack(id, use) {
  "use strict";
  var bin = atob(document.getElementById(id).textContent.trim()), bytes = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text()
    .then(function (text) { use(JSON.parse(text)); document.body.setAttribute("data-ready", "1"); })
    .catch(function (e) {
      var p = document.createElement("p");
      p.textContent = "This browser could not read the report's embedded data (" + e + "); it needs DecompressionStream.";
      document.body.insertBefore(p, document.body.firstChild);
    });
}
