// A minimal MCP Apps host for the browser test: renders the interface of the tool the
// "model" called in a sandboxed iframe, with the official app-bridge, and relays the app's
// tool calls to the test's proxy (which calls the mcpgen server with mcpgen's Client).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const log = (line) => {
  document.getElementById("log").textContent += line + "\n";
};

// An origin, as mcpgen's read_interface keeps them (mcpgen/runtime/client/apps.py, ORIGIN):
// checked again here, so that no declared value can add a keyword or a directive.
const ORIGIN = /^(?:https?|wss?):\/\/(?:\*\.)?[A-Za-z0-9.-]+(?::(?:\d{1,5}|\*))?(?:\/[A-Za-z0-9._~%\/-]*)?$/;

// The extension's restrictive default CSP, widened only by the origins the interface declares
// that read_interface kept (`origins`: Interface.csp).
function csp(origins) {
  const list = (key) => (origins?.[key] ?? []).filter((value) => ORIGIN.test(value)).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${list("resourceDomains")}`,
    `style-src 'self' 'unsafe-inline' ${list("resourceDomains")}`,
    `img-src 'self' data: ${list("resourceDomains")}`,
    `media-src 'self' data: ${list("resourceDomains")}`,
    `connect-src ${list("connectDomains") || "'none'"}`,
    `frame-src ${list("frameDomains") || "'none'"}`,
    `base-uri ${list("baseUriDomains") || "'none'"}`,
    "form-action 'none'",
  ].join("; ");
}

// The interface with the policy as the first element of its head, whatever its markup says
// (`<HEAD>`, `<head lang=..>`, no head at all): the document is parsed, not searched for a
// literal "<head>", and the policy comes before anything that could run.
function withPolicy(html, policy) {
  const doc = new DOMParser().parseFromString(html, "text/html");
  const meta = doc.createElement("meta");
  meta.httpEquiv = "Content-Security-Policy";
  meta.content = policy;
  doc.head.prepend(meta);
  return `<!doctype html>\n${doc.documentElement.outerHTML}`;
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
  iframe.srcdoc = withPolicy(start.html, csp(start.csp));
  document.body.dataset.state = "rendering";
}

main().catch((error) => {
  document.body.dataset.state = "failed";
  log(`host failed: ${error}`);
});
