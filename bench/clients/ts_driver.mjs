// One TypeScript SDK client against the registry: each operation of the client matrix, one JSON line each.
//
// run_matrix.py copies this file into the client's install folder under /tmp (ES modules resolve
// packages next to the script) and runs:
//
//   node ts_driver.mjs --sdk v1|v2 --generation 2025-11-25|2026-07-28|auto (--url URL | --stdio '["cmd", "arg"]')
//
// * v1: @modelcontextprotocol/sdk 1.x (Client + StreamableHTTPClientTransport / StdioClientTransport);
//   it negotiates handshake-era revisions only (its LATEST_PROTOCOL_VERSION is 2025-11-25);
// * v2: @modelcontextprotocol/client 2.x; 2026-07-28 through versionNegotiation {pin: "2026-07-28"}
//   (server/discover, per-request _meta, client.listen()).
// --stdio runs the client over stdio against a local proxy (mcp-remote), which forwards to the server.
// After subscribing the driver runs $TRIGGER (publishes a change of test://watched-resource) and
// waits up to 10 s ($NOTIFY_WAIT_MS) for notifications/resources/updated. Each line: {"op", "ok", "detail"}.
import { exec } from "node:child_process";

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, value, i, all) =>
  (i % 2 === 0 ? [...pairs, [value.replace(/^--/, ""), all[i + 1]]] : pairs), []));
const WATCHED = "test://watched-resource";
const PROMPT = "test_prompt_with_arguments";
// "auto": versionNegotiation {mode: "auto"} (probe server/discover, fall back to initialize): must pick 2026-07-28.
const auto = args.generation === "auto";
let modern = args.generation === "2026-07-28";

const report = (op, ok, detail = "") =>
  console.log(JSON.stringify({ op, ok, detail: String(detail ?? "").slice(0, 300) }));
async function step(op, fn) {
  try { report(op, true, await fn()); return true; } catch (e) { report(op, false, e?.message ?? e); return false; }
}
const check = (cond, what) => { if (!cond) throw new Error(`unexpected: ${JSON.stringify(what).slice(0, 250)}`); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const trigger = () => new Promise((resolve, reject) =>
  exec(process.env.TRIGGER, (err, _out, stderr) => (err ? reject(new Error(`trigger: ${stderr.slice(-200)}`)) : resolve())));

let updated = [];
let wake = () => {};
async function waitUpdated() {
  const wait = Number(process.env.NOTIFY_WAIT_MS || 10000);
  const deadline = Date.now() + wait;
  while (!updated.includes(WATCHED)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no notifications/resources/updated within ${wait / 1000} s (got ${JSON.stringify(updated)})`);
    await Promise.race([new Promise((r) => { wake = r; }), sleep(left)]);
  }
  return `updated ${WATCHED}`;
}
const onUpdated = (n) => { updated.push(n.params.uri); wake(); };

async function connect() {
  if (args.sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { ResourceUpdatedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    const client = new Client({ name: "matrix-ts-v1", version: "1" }, { capabilities: {} });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, onUpdated);
    let transport;
    if (args.stdio) {
      const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
      const [command, ...rest] = JSON.parse(args.stdio);
      transport = new StdioClientTransport({ command, args: rest, env: process.env, stderr: "pipe" });
      transport.stderr?.on("data", (d) => process.stderr.write(d));
      transport.setProtocolVersion = (v) => { transport.negotiated = v; }; // what connect() reports
    } else {
      const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
      transport = new StreamableHTTPClientTransport(new URL(args.url));
    }
    await client.connect(transport);
    return { client, version: transport.protocolVersion ?? transport.negotiated };
  }
  const sdk = await import("@modelcontextprotocol/client");
  const options = { capabilities: {} };
  if (modern) options.versionNegotiation = { mode: { pin: "2026-07-28" } };
  if (auto) options.versionNegotiation = { mode: "auto" };
  const client = new sdk.Client({ name: "matrix-ts-v2", version: "2" }, options);
  client.setNotificationHandler("notifications/resources/updated", onUpdated);
  let transport;
  if (args.stdio) {
    const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
    const [command, ...rest] = JSON.parse(args.stdio);
    transport = new StdioClientTransport({ command, args: rest, env: process.env, stderr: "pipe" });
    transport.stderr?.on("data", (d) => process.stderr.write(d));
  } else {
    transport = new sdk.StreamableHTTPClientTransport(new URL(args.url));
  }
  await client.connect(transport);
  return { client, version: client.getNegotiatedProtocolVersion() };
}

let client;
const ok = await step("init", async () => {
  const got = await connect();
  client = got.client;
  const version = got.version;
  check(version === (auto ? "2026-07-28" : args.generation), { negotiated: version });
  modern = version === "2026-07-28";
  return `${auto ? "auto" : modern ? "server/discover" : "initialize"} -> ${version}`;
});
if (ok) {
  await step("prompts/list", async () => {
    const r = await client.listPrompts();
    check(r.prompts.some((p) => p.name === PROMPT), r.prompts.map((p) => p.name));
    return `${r.prompts.length} prompts`;
  });
  await step("prompts/get", async () => {
    const r = await client.getPrompt({ name: PROMPT, arguments: { arg1: "a1", arg2: "b2" } });
    const text = r.messages[0].content.text;
    check(text.includes("arg1='a1'") && text.includes("arg2='b2'"), text);
    const image = await client.getPrompt({ name: "test_prompt_with_image" });
    check(image.messages[0].content.type === "image" && image.messages[0].content.data, image.messages[0]);
    const embedded = await client.getPrompt({ name: "test_prompt_with_embedded_resource",
      arguments: { resourceUri: "test://example-resource" } });
    check(embedded.messages[0].content.type === "resource", embedded.messages[0]);
    return "arguments, image, embedded resource";
  });
  await step("resources/list", async () => {
    const r = await client.listResources();
    check(r.resources.some((x) => x.uri === "test://static-text"), r.resources.map((x) => x.uri));
    return `${r.resources.length} resources`;
  });
  await step("resources/read", async () => {
    const r = await client.readResource({ uri: "test://static-text" });
    check(r.contents[0].text === "This is the content of the static text resource.", r.contents[0]);
    const t = await client.readResource({ uri: "test://template/123/data" });
    check(t.contents[0].text.includes("123"), t.contents[0]);
    const blob = await client.readResource({ uri: "test://static-binary" });
    check(blob.contents[0].blob && blob.contents[0].mimeType === "image/png", blob.contents[0]);
    const recent = await client.readResource({ uri: "registry://changes/recent" });
    check(recent.contents.length === 2 && recent.contents[1].mimeType === "application/json", recent.contents);
    return "text, template, blob, registry://changes/recent";
  });
  await step("resources/templates/list", async () => {
    const r = await client.listResourceTemplates();
    check(r.resourceTemplates.some((x) => x.uriTemplate === "test://template/{id}/data"), r.resourceTemplates);
    return `${r.resourceTemplates.length} templates`;
  });
  await step("completion", async () => {
    const r = await client.complete({ ref: { type: "ref/prompt", name: PROMPT }, argument: { name: "arg1", value: "" } });
    check(Array.isArray(r.completion.values), r);
    const names = await client.complete({ ref: { type: "ref/resource", uri: "registry://prompts/{name}/changelog" },
      argument: { name: "name", value: "test_s" } });
    check(names.completion.values.includes("test_simple_prompt"), names);
    return `prompt arg + template variable (${JSON.stringify(names.completion.values)})`;
  });
  await step("errors", async () => {
    const failure = async (call) => { try { await call(); } catch (e) { return e; } return { code: "no error" }; };
    const unknown = await failure(() => client.readResource({ uri: "test://nonexistent" }));
    const missing = await failure(() => client.getPrompt({ name: PROMPT, arguments: {} }));
    const notFound = modern ? -32602 : -32002; // resource not found: -32002 until 2025-11-25, -32602 at 2026-07-28
    // 2.x rebuilds a -32002 carrying data.uri as its ResourceNotFoundError, whose code is -32602
    const normalised = args.sdk === "v2" && unknown.code === -32602 && unknown.data?.uri === "test://nonexistent";
    check((unknown.code === notFound || normalised) && missing.code === -32602,
      { unknown: unknown.code, missing: missing.code });
    return `unknown URI ${notFound}${normalised && !modern ? " (shown by the SDK as -32602)" : ""}, missing argument -32602`;
  });
  if (modern) {
    await step("listen", async () => {
      const sub = await client.listen({ resourceSubscriptions: [WATCHED] });
      check(JSON.stringify(sub.honoredFilter.resourceSubscriptions) === JSON.stringify([WATCHED]), sub.honoredFilter);
      try {
        await trigger();
        return (await waitUpdated()) + " (acknowledged)";
      } finally {
        await sub.close();
      }
    });
  } else {
    await step("subscribe", async () => {
      await client.subscribeResource({ uri: WATCHED });
      await sleep(500); // the GET stream opens in the background after notifications/initialized
      await trigger();
      return await waitUpdated();
    });
  }
  await Promise.race([client.close(), sleep(3000)]);
}
process.exit(0);
