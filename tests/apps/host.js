// A minimal MCP Apps host for the browser test: renders the interface of the tool the
// "model" called in a sandboxed iframe, with the official app-bridge, and relays the app's
// tool calls to the test's proxy (which calls the mcpgen server with mcpgen's Client).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const log = (line) => {
  document.getElementById("log").textContent += line + "\n";
};

// The extension's restrictive default CSP, widened only by the domains the interface declares.
function csp(meta) {
  const declared = meta?.csp ?? {};
  const list = (domains) => (domains ?? []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${list(declared.resourceDomains)}`,
    `style-src 'self' 'unsafe-inline' ${list(declared.resourceDomains)}`,
    `img-src 'self' data: ${list(declared.resourceDomains)}`,
    `media-src 'self' data: ${list(declared.resourceDomains)}`,
    `connect-src ${list(declared.connectDomains) || "'none'"}`,
  ].join("; ");
}

async function main() {
  const start = await (await fetch("/api/start")).json();
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  document.getElementById("frame").appendChild(iframe);

  const bridge = new AppBridge(
    null,
    { name: "mcpgen-test-host", version: "1.0.0" },
    { serverTools: {}, updateModelContext: { text: {} }, logging: {} },
  );
  bridge.oncalltool = async (params) => {
    log(`app -> tools/call ${params.name} ${JSON.stringify(params.arguments)}`);
    const answer = await fetch("/api/call_tool", { method: "POST", body: JSON.stringify(params) });
    const result = await answer.json();
    log(`server -> ${JSON.stringify(result.structuredContent ?? result.content)}`);
    return result;
  };
  bridge.onupdatemodelcontext = async (params) => {
    const text = params.content?.map((block) => block.text ?? "").join(" ") ?? "";
    document.getElementById("context").textContent = text;
    document.body.dataset.context = text;
    return {};
  };
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: start.arguments });
    await bridge.sendToolResult(start.result);
    document.body.dataset.state = "initialized";
    log("app initialized; sent the tool's input and result");
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  const policy = `<meta http-equiv="Content-Security-Policy" content="${csp(start.meta)}">`;
  iframe.srcdoc = start.html.replace("<head>", `<head>${policy}`);
  document.body.dataset.state = "rendering";
}

main().catch((error) => {
  document.body.dataset.state = "failed";
  log(`host failed: ${error}`);
});
