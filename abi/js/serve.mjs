// Serves the built package (dist/js) on loopback, for the playground page and its browser test:
//   node abi/js/serve.mjs [PORT]   then open http://127.0.0.1:PORT/www/
// ES modules and WebAssembly cannot load from file:// URLs, hence a server at all.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  // The right type lets the browser compile the module while it downloads.
  '.wasm': 'application/wasm',
  '.png': 'image/png',
};

/** Starts serving `root` on 127.0.0.1:`port` (0: any free port); resolves to the server. */
export function serve(root, port = 0) {
  const base = resolve(root);
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    let file = normalize(join(base, path));
    if (file !== base && !file.startsWith(base + sep)) {
      res.writeHead(403).end();
      return;
    }
    if (path.endsWith('/')) file = join(file, 'index.html');
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => done(server));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../../dist/js', import.meta.url));
  const server = await serve(root, Number(process.argv[2] ?? 8080));
  console.log(`serving ${root} on http://127.0.0.1:${server.address().port}/www/`);
}
