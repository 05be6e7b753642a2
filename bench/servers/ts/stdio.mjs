// The TypeScript SDK's echo server over stdio (serveStdio: both eras on one connection,
// the first message picks). Run: node bench/servers/ts/stdio.mjs
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { makeServer } from "./echo.mjs";

serveStdio(() => makeServer());
