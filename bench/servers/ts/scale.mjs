// The TypeScript SDK v2's server for bench/scale.py: the tools of bench/servers/scale_tools.py
// (echo_async, blob and, with --tools N, N numbered tools), written the way the SDK's
// documentation writes a tool.
//
//   node bench/servers/ts/scale.mjs stdio [--tools N]
//       serveStdio: one instance per connection, both eras (the first message picks).
//   node bench/servers/ts/scale.mjs http PORT [--tools N] [--json-response]
//       createMcpHandler under node:http, as http.mjs: 2026-07-28 requests on its modern
//       path, 2025-era ones on its stateless legacy fallback (a fresh instance per request).
//   node bench/servers/ts/scale.mjs sessions PORT [--json-response]
//       the SDK's sessionful wiring for the handshake era (one McpServer and one
//       NodeStreamableHTTPServerTransport per session, kept in a map by session id, as its
//       examples do), requests naming a 2026-07-28 MCP-Protocol-Version routed to a strict
//       createMcpHandler (legacy: "reject").
//
// On SIGUSR2 the process runs a full garbage collection when started with --expose-gc
// (bench/scale.py does, before it reads the RSS of an HTTP server).
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { createMcpHandler, isInitializeRequest, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { NodeStreamableHTTPServerTransport, toNodeHandler } from "@modelcontextprotocol/node";
import * as z from "zod";

const MAX_MEGABYTES = 64;
const PIECE = "The quick brown fox jumps over the lazy dog, then naps in the sun. ";
const texts = new Map();

function blobText(megabytes) {
  if (!(megabytes > 0 && megabytes <= MAX_MEGABYTES)) throw new Error(`megabytes must be 1 to ${MAX_MEGABYTES}`);
  let text = texts.get(megabytes);
  if (text === undefined) {
    const size = megabytes * 1024 * 1024;
    text = PIECE.repeat(Math.ceil(size / PIECE.length)).slice(0, size);
    texts.set(megabytes, text);
  }
  return text;
}

const args = process.argv.slice(2);
const mode = args[0];
const port = mode === "stdio" ? 0 : Number(args[1]);
const toolsAt = args.indexOf("--tools");
const tools = toolsAt >= 0 ? Number(args[toolsAt + 1]) : 0;
const json = args.includes("--json-response");
if (!["stdio", "http", "sessions"].includes(mode) || (mode !== "stdio" && !(port > 0)) || !(tools >= 0)) {
  console.error("usage: scale.mjs stdio|http PORT|sessions PORT [--tools N] [--json-response]");
  process.exit(2);
}

function makeServer() {
  const server = new McpServer({ name: "ts-sdk-scale", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.registerTool(
    "echo_async",
    { description: "Echo the text back.", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "blob",
    { description: "A text of that many MiB.", inputSchema: z.object({ megabytes: z.number().int() }) },
    async ({ megabytes }) => ({ content: [{ type: "text", text: blobText(megabytes) }] }),
  );
  for (let number = 0; number < tools; number++) {
    server.registerTool(
      `tool_${String(number).padStart(5, "0")}`,
      {
        description: `Tool ${number}: look the query up in collection ${number} and return at most limit matches.`,
        inputSchema: z.object({ query: z.string(), limit: z.number().int().default(10) }),
      },
      async ({ query, limit }) => ({ content: [{ type: "text", text: `${number}:${query}:${limit}` }] }),
    );
  }
  return server;
}

process.on("SIGUSR2", () => globalThis.gc?.());

if (mode === "stdio") {
  serveStdio(() => makeServer());
} else {
  const modern = createMcpHandler(() => makeServer(), {
    responseMode: json ? "json" : "auto",
    ...(mode === "sessions" && { legacy: "reject" }),
  });
  const serveModern = toNodeHandler(modern);
  const sessions = new Map();

  async function readJson(req) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  }

  async function serveSession(req, res) {
    const id = req.headers["mcp-session-id"];
    const body = req.method === "POST" ? await readJson(req) : undefined;
    let transport = id === undefined ? undefined : sessions.get(id);
    if (transport === undefined) {
      if (id !== undefined || req.method !== "POST" || !isInitializeRequest(body)) {
        res.writeHead(id === undefined ? 400 : 404, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no such session" } }));
        return;
      }
      transport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: json,
        onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
      });
      transport.onclose = () => sessions.delete(transport.sessionId);
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  }

  const modernEra = (req) => /^2026-/.test(req.headers["mcp-protocol-version"] ?? "");
  const server = createServer((req, res) => {
    const serve = mode === "http" || modernEra(req) ? serveModern : serveSession;
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
      modern.close().finally(() => process.exit(0));
    });
  }
}
