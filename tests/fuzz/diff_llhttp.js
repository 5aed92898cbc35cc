// diff_llhttp.js - node's llhttp (the parser of node's http server) as a
// reference for tests/fuzz/diff_llhttp.sh: reads length-prefixed streams
// from the file argv[2], prints for each how many request heads node's
// parser completes before its first error, starting over after an upgrade
// request (an Upgrade answered 200 leaves an HTTP/1 connection).
'use strict';
process.noDeprecation = true; // process.binding('http_parser'): the parser node's server uses
const { HTTPParser } = process.binding('http_parser');
const fs = require('fs');
const data = fs.readFileSync(process.argv[process.argv.length - 1]);

function heads(buf) {
  let n = 0;
  let off = 0;
  for (;;) {
    const p = new HTTPParser();
    p.initialize(HTTPParser.REQUEST, {});
    let upgrade = false;
    p[HTTPParser.kOnHeadersComplete] = (maj, min, h, method, url, st, sm, up) => {
      n++;
      upgrade = up;
      return 0;
    };
    p[HTTPParser.kOnHeaders] = () => {};
    p[HTTPParser.kOnBody] = () => {};
    p[HTTPParser.kOnMessageComplete] = () => {};
    p[HTTPParser.kOnExecute] = () => {};
    const r = p.execute(buf.subarray(off));
    p.close();
    if (r instanceof Error || !upgrade || typeof r !== 'number' || r <= 0) return n;
    off += r;
    if (off >= buf.length) return n;
  }
}

const out = [];
for (let i = 0; i + 4 <= data.length;) {
  const len = data.readUInt32BE(i);
  out.push(String(heads(data.subarray(i + 4, i + 4 + len))));
  i += 4 + len;
}
process.stdout.write(out.join('\n') + '\n');
