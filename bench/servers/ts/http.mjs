// The TypeScript SDK's echo server over Streamable HTTP: createMcpHandler (2026-07-28
// requests on its modern path, 2025-era ones on its stateless legacy fallback), served by
// node:http through @modelcontextprotocol/node's toNodeHandler, on 127.0.0.1.
// Run: node bench/servers/ts/http.mjs PORT [--json-response]
import { createServer } from "node:http";
import { createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { makeServer } from "./echo.mjs";

const port = Number(process.argv[2]);
const json = process.argv.slice(3).includes("--json-response");
const handler = createMcpHandler(() => makeServer(), { responseMode: json ? "json" : "auto" });
const serve = toNodeHandler(handler);
const server = createServer((req, res) => {
  serve(req, res).catch((error) => {
    console.error(error);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, "127.0.0.1");
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    server.close();
    handler.close().finally(() => process.exit(0));
  });
}
