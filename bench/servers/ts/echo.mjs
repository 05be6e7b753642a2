// The TypeScript MCP SDK v2 (@modelcontextprotocol/server) echo server, for bench/stdio.py
// and bench/http.py: the same tools as bench/servers/mcpgen_echo.py, written the way the
// SDK's documentation writes a tool. echo, echo_async and echo_threaded are one async
// handler each (JavaScript has no threads to hand a tool to); echo_progress reports
// progress once (when the caller sent a progressToken), then echoes.
import { McpServer } from "@modelcontextprotocol/server";
import * as z from "zod";

const input = { inputSchema: z.object({ text: z.string() }) };

export function makeServer() {
  const server = new McpServer({ name: "ts-sdk-echo", version: "1.0.0" }, { capabilities: { tools: {} } });
  for (const name of ["echo", "echo_async", "echo_threaded"]) {
    server.registerTool(name, { description: "Echo the text back.", ...input }, async ({ text }) => ({
      content: [{ type: "text", text }],
    }));
  }
  server.registerTool(
    "echo_progress",
    { description: "Report progress once, then echo the text back.", ...input },
    async ({ text }, ctx) => {
      const token = ctx.mcpReq?._meta?.progressToken;
      if (token !== undefined) {
        await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: 1, total: 1 } });
      }
      return { content: [{ type: "text", text }] };
    },
  );
  return server;
}
