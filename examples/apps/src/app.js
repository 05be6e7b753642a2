// The dice app: a bar chart of the rolls of the `roll_dice` tool, with a button that rolls
// again through the host (the app calls the server's tool over the App SDK's bridge).
import { App } from "@modelcontextprotocol/ext-apps";

const app = new App({ name: "dice-chart", version: "1.0.0" });
const chart = document.getElementById("chart");
const summary = document.getElementById("summary");

function show(result) {
  const data = result.structuredContent;
  if (!data || !Array.isArray(data.rolls)) {
    summary.textContent = "no rolls in this result";
    return;
  }
  chart.replaceChildren(
    ...data.rolls.map((value) => {
      const bar = document.createElement("div");
      bar.className = "bar";
      bar.style.height = `${(value / data.sides) * 100}%`;
      bar.textContent = String(value);
      return bar;
    }),
  );
  summary.textContent = `${data.rolls.length}d${data.sides}: total ${data.total}`;
  summary.dataset.total = String(data.total);
}

// The result of the call the host rendered this interface for.
app.ontoolresult = (result) => show(result);

document.getElementById("again").addEventListener("click", () => rollAgain());

async function rollAgain() {
  const result = await app.callServerTool({ name: "roll_dice", arguments: { count: 5, sides: 6 } });
  show(result);
  // Tell the host what the user now sees (it may add it to the model's context).
  await app.updateModelContext({ content: [{ type: "text", text: summary.textContent }] });
}

app.connect().then(() => {
  document.body.dataset.connected = "yes";
});
