// The host page of `mcpgen apps preview`: lists a server's tools that link an MCP Apps
// interface, calls one as a model would, renders its interface in a sandboxed iframe with
// the official app-bridge, and relays what the app asks of the host to the mcpgen process
// (which holds the MCP client). Text from the server is only ever set as textContent.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const token = document.querySelector('meta[name="mcpgen-token"]').content;
const element = (id) => document.getElementById(id);
const log = (line) => {
  element("log").textContent += line + "\n";
};

async function api(path, body) {
  const answer = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers: { "x-mcpgen-preview": token, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await answer.json();
  if (!answer.ok) throw new Error(data.error || `HTTP ${answer.status}`);
  return data;
}

let bridge = null;

async function openInterface(name, args) {
  if (bridge !== null) {
    try {
      await bridge.teardownResource({});
    } catch (error) {
      log(`teardown: ${error}`);
    }
    bridge = null;
  }
  document.body.dataset.state = "calling";
  const started = await api("/api/open", { name, arguments: args });
  for (const warning of started.warnings) log(`warning: ${warning}`);
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts allow-forms");
  iframe.setAttribute("allow", started.allow);
  iframe.setAttribute("title", `interface of ${name}`);
  element("frame").replaceChildren(iframe);
  const current = new AppBridge(
    null,
    { name: "mcpgen apps preview", version: started.version },
    {
      serverTools: {},
      serverResources: {},
      openLinks: {},
      updateModelContext: { text: {} },
      message: { text: {} },
      logging: {},
    },
  );
  bridge = current;
  current.oncalltool = async (params) => {
    log(`app -> tools/call ${params.name} ${JSON.stringify(params.arguments ?? {})}`);
    const result = await api("/api/call_tool", params);
    log(`server -> ${JSON.stringify(result.structuredContent ?? result.content)}`);
    return result;
  };
  current.onreadresource = async (params) => {
    log(`app -> resources/read ${params.uri}`);
    return api("/api/read_resource", params);
  };
  current.onlistresources = async () => api("/api/list_resources", {});
  current.onopenlink = async (params) => {
    log(`app asks to open ${params.url} (the preview does not follow links)`);
    return {};
  };
  current.onmessage = async (params) => {
    log(`app -> message for the chat: ${JSON.stringify(params.content)}`);
    return {};
  };
  current.onupdatemodelcontext = async (params) => {
    const text = (params.content ?? []).map((block) => block.text ?? "").join(" ");
    element("context").textContent = text;
    document.body.dataset.context = text;
    return {};
  };
  current.onloggingmessage = (params) => log(`app log ${params.level}: ${JSON.stringify(params.data)}`);
  current.onsizechange = (params) => {
    if (typeof params.height === "number") iframe.style.height = `${Math.max(120, Math.min(params.height, 4000))}px`;
  };
  current.oninitialized = async () => {
    await current.sendToolInput({ arguments: args });
    await current.sendToolResult(started.result);
    document.body.dataset.state = "initialized";
    log(`${name}: the app has the tool's input and result`);
  };
  await current.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.src = started.src; // served with the interface's Content Security Policy as a header
  document.body.dataset.state = "rendering";
}

// Call the tool as a model would and render its interface; a failure is logged on the page.
function open(name, args) {
  return openInterface(name, args).catch((error) => {
    document.body.dataset.state = "failed";
    log(`${name}: ${error}`);
  });
}

function toolCard(tool) {
  const card = document.createElement("div");
  card.className = "tool";
  card.dataset.tool = tool.name;
  const title = document.createElement("b");
  title.textContent = tool.title ? `${tool.title} (${tool.name})` : tool.name;
  const about = document.createElement("small");
  about.textContent = `${tool.description || ""} [${tool.uri}; ${tool.forModel ? "model" : ""}${tool.forModel && tool.forApp ? " and " : ""}${tool.forApp ? "app" : ""}]`;
  const args = document.createElement("textarea");
  args.value = "{}";
  args.setAttribute("aria-label", `arguments of ${tool.name} (JSON)`);
  const button = document.createElement("button");
  button.textContent = "Call and open";
  button.addEventListener("click", () => {
    let parsed;
    try {
      parsed = JSON.parse(args.value || "{}");
    } catch (error) {
      log(`${tool.name}: the arguments are not JSON: ${error}`);
      return;
    }
    open(tool.name, parsed);
  });
  card.append(title, about, args, button);
  return card;
}

async function main() {
  const listed = await api("/api/interfaces");
  element("server").textContent = `${listed.server} — MCP Apps preview`;
  element("warnings").textContent = listed.warnings.join("\n");
  element("tools").replaceChildren(...listed.tools.map(toolCard));
  if (listed.tools.length === 0) element("tools").textContent = "This server links no tool to an interface.";
  document.body.dataset.state = "ready";
}

window.mcpgenPreview = { open };
main().catch((error) => {
  document.body.dataset.state = "failed";
  log(`preview failed: ${error}`);
});
