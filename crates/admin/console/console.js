// Spool's web console: one page, routed by the URL's hash, built from the REST API
// (/api) and /metrics. No framework and no build step: the broker serves this file as
// it is. Every value from the broker goes into the page as text (textContent), never
// as HTML, so a message's bytes cannot run script.
"use strict";

const page = document.getElementById("page");

// An element with attributes (`on*` ones become listeners) and children (strings
// become text nodes).
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function table(headers, rows, numeric = []) {
  return h("table", {},
    h("thead", {}, h("tr", {}, headers.map((name, i) => h("th", { class: numeric.includes(i) ? "num" : null }, name)))),
    h("tbody", {}, rows.length
      ? rows.map(cells => h("tr", {}, cells.map((cell, i) => h("td", { class: numeric.includes(i) ? "num" : null }, cell))))
      : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "None"))));
}

function card(label, value, id) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label), h("div", { class: "value", id }, value));
}

function toast(message, bad) {
  const box = document.getElementById("toast");
  box.textContent = message;
  box.className = bad ? "bad" : "";
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 5000);
}

// Calls the REST API; a JSON error becomes an Error with the broker's message.
async function api(path, options = {}) {
  const response = await fetch("/api" + path, {
    ...options,
    headers: { "content-type": "application/json" },
  });
  if (response.status === 204) return null;
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(`${body.error || response.status}: ${body.message || response.statusText}`);
  }
  return body;
}

// The metrics text as {series: value} (series with their labels, as written).
async function metrics() {
  const response = await fetch("/metrics");
  if (!response.ok) return null;
  const values = {};
  for (const line of (await response.text()).split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    values[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return values;
}

function sum(values, prefix) {
  return Object.entries(values || {})
    .filter(([series]) => series.startsWith(prefix))
    .reduce((total, [, value]) => total + value, 0);
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) { n /= 1024; unit += 1; }
  return `${n.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

function shown(value) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "null");
  return h("span", {}, value.data, value.encoding === "utf8" ? null : h("span", { class: "enc" }, value.encoding));
}

function link(href, text) {
  return h("a", { href }, text);
}

// ---- Pages ------------------------------------------------------------------

async function overview() {
  const [cluster, topics, groups] = await Promise.all([api("/cluster"), api("/topics"), api("/groups")]);
  const partitions = topics.reduce((n, topic) => n + topic.partitions, 0);
  const rates = h("div", { class: "cards" },
    card("Bytes in / s", "…", "rate-in"), card("Bytes out / s", "…", "rate-out"),
    card("Records in / s", "…", "rate-records"), card("Requests / s", "…", "rate-requests"));
  page.replaceChildren(
    h("h1", {}, "Overview"),
    h("div", { class: "cards" },
      card("Mode", cluster.mode), card("Brokers", cluster.brokers.length),
      card("Topics", topics.length), card("Partitions", partitions),
      card("Consumer groups", groups.length)),
    h("h2", {}, "Throughput (this broker)"), rates,
    h("h2", {}, "Brokers"),
    table(["Node", "Address", "Rack", "Partitions led", "Role"], cluster.brokers.map(broker => [
      broker.node_id, `${broker.host}:${broker.port}`, broker.rack || "-", broker.partitions_led,
      [broker.reader ? "reader" : "writer",
       broker.node_id === cluster.node_id ? "this broker" : null,
       broker.node_id === cluster.controller ? "controller" : null].filter(Boolean).join(", "),
    ]), [3]));
  // Rates from two scrapes a second apart.
  const first = await metrics();
  if (!first) { rates.replaceChildren(h("p", { class: "muted" }, "Metrics are off on this broker.")); return; }
  await new Promise(resolve => setTimeout(resolve, 1000));
  const second = await metrics();
  const rate = prefix => Math.max(0, sum(second, prefix) - sum(first, prefix));
  const set = (id, text) => { const node = document.getElementById(id); if (node) node.textContent = text; };
  set("rate-in", bytes(rate("spool_topic_bytes_in_total")));
  set("rate-out", bytes(rate("spool_topic_bytes_out_total")));
  set("rate-records", rate("spool_topic_records_in_total").toLocaleString());
  set("rate-requests", rate("spool_requests_total").toLocaleString());
}

async function topicList() {
  const topics = await api("/topics");
  const form = h("form", { class: "inline", id: "create-topic", onsubmit: createTopic },
    h("label", {}, "Name", h("input", { name: "name", required: true, pattern: "[a-zA-Z0-9._-]+", placeholder: "orders" })),
    h("label", {}, "Partitions", h("input", { name: "partitions", type: "number", min: 1, placeholder: "default" })),
    h("label", {}, "Configs (key=value, one per line)", h("textarea", { name: "configs", rows: 1, cols: 34, placeholder: "retention.ms=86400000" })),
    h("button", { type: "submit" }, "Create topic"));
  page.replaceChildren(
    h("h1", {}, "Topics"), form,
    table(["Name", "Partitions", "Offsets", ""], topics.map(topic => [
      link(`#/topics/${encodeURIComponent(topic.name)}`, topic.name), topic.partitions, topic.records.toLocaleString(),
      h("button", { class: "danger", "data-delete": topic.name, onclick: () => deleteTopic(topic.name) }, "Delete"),
    ]), [1, 2]));
}

async function createTopic(event) {
  event.preventDefault();
  const data = new FormData(event.target);
  const configs = {};
  for (const line of String(data.get("configs") || "").split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) configs[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  const request = { name: String(data.get("name")).trim(), configs };
  if (data.get("partitions")) request.partitions = Number(data.get("partitions"));
  try {
    await api("/topics", { method: "POST", body: JSON.stringify(request) });
    toast(`Created topic ${request.name}`);
    await route();
  } catch (error) {
    toast(error.message, true);
  }
}

async function deleteTopic(name) {
  if (!confirm(`Delete topic ${name} and all its records?`)) return;
  try {
    await api(`/topics/${encodeURIComponent(name)}`, { method: "DELETE" });
    toast(`Deleted topic ${name}`);
    if (location.hash === "#/topics") await route(); else location.hash = "#/topics";
  } catch (error) {
    toast(error.message, true);
  }
}

async function topicPage(name) {
  const topic = await api(`/topics/${encodeURIComponent(name)}`);
  const browser = h("div", { id: "messages" });
  const options = topic.partitions.map(p => h("option", { value: p.partition }, p.partition));
  const form = h("form", { class: "inline", id: "browse", onsubmit: event => { event.preventDefault(); browse(topic.name, event.target, browser); } },
    h("label", {}, "Partition", h("select", { name: "partition" }, options)),
    h("label", {}, "Start at", h("select", { name: "from" },
      h("option", { value: "newest" }, "newest"), h("option", { value: "offset" }, "offset"), h("option", { value: "time" }, "time"))),
    h("label", {}, "Offset", h("input", { name: "offset", type: "number", min: 0, value: 0 })),
    h("label", {}, "Time", h("input", { name: "time", type: "datetime-local", step: 1 })),
    h("label", {}, "Count", h("input", { name: "limit", type: "number", min: 1, max: 1000, value: 50 })),
    h("label", {}, "Show bytes as", h("select", { name: "encoding" },
      h("option", { value: "auto" }, "text when UTF-8"), h("option", { value: "base64" }, "base64"))),
    h("button", { type: "submit" }, "Show messages"));
  page.replaceChildren(
    h("h1", {}, "Topic ", topic.name, " ",
      h("button", { class: "danger", onclick: () => deleteTopic(topic.name) }, "Delete")),
    h("p", { class: "muted" }, `id ${topic.id}`),
    h("h2", {}, "Partitions"),
    partitionTable(topic.partitions),
    ...tableSection(topic.table),
    h("h2", {}, "Messages"), form, browser,
    ...searchSection(topic),
    h("h2", {}, "Configs"),
    h("p", { class: "muted" }, "Highlighted: set on this topic. Edit sets a value on the topic; Reset goes back to the broker's default."),
    configTable(topic));
  // The offset and time boxes count only with their choice of start.
  const from = form.elements.from;
  const followStart = () => {
    form.elements.offset.disabled = from.value !== "offset";
    form.elements.time.disabled = from.value !== "time";
  };
  from.addEventListener("change", followStart);
  followStart();
}

// A table topic's Iceberg table (docs/tables.md): its lag, what was written, errors,
// and where each partition is; nothing for other topics.
function tableSection(info) {
  if (!info) return [];
  return [
    h("h2", { id: "table" }, "Table ", info.table),
    h("div", { class: "cards" },
      card("Lag (records)", info.lag_records.toLocaleString()),
      card("Lag (seconds)", Math.round(info.lag_ms / 1000)),
      card("Files", info.files_written.toLocaleString()),
      card("Rows", info.rows_written.toLocaleString()),
      card("Commits", info.commits.toLocaleString()),
      card("Errors", info.errors.toLocaleString())),
    info.last_error ? h("p", { class: "error" }, info.last_error) : null,
    table(["Partition", "Table offset", "High watermark", "Lag"], info.partitions.map(p => [
      p.partition, p.committed_offset, p.high_watermark, p.lag_records])),
  ].filter(Boolean);
}

// A topic's configs: those set on the topic highlighted; each editable, and those set
// on the topic reset to their default.
function configTable(topic) {
  const rows = topic.configs.map(c => {
    const own = c.source === "topic";
    return [c.name, c.value, c.source, h("span", {},
      h("button", { class: "secondary", "data-edit": c.name, onclick: () => editConfig(topic.name, c) }, "Edit"),
      own ? h("button", { class: "secondary", "data-reset": c.name, onclick: () => changeConfig(topic.name, { [c.name]: null }) }, "Reset") : null)];
  });
  const configs = table(["Name", "Value", "Source", ""], rows);
  topic.configs.forEach((c, i) => {
    if (c.source === "topic") configs.tBodies[0].rows[i].classList.add("overridden");
  });
  return configs;
}

async function editConfig(topic, config) {
  const value = prompt(`${config.name} of ${topic}:`, config.value ?? "");
  if (value === null) return;
  await changeConfig(topic, { [config.name]: value });
}

async function changeConfig(topic, changes) {
  try {
    await api(`/topics/${encodeURIComponent(topic)}/configs`, { method: "PATCH", body: JSON.stringify(changes) });
    toast(`Changed ${Object.keys(changes).join(", ")} of ${topic}`);
    await route();
  } catch (error) {
    toast(error.message, true);
  }
}

// A topic's partitions; with delayed delivery, its held records and next due time.
function partitionTable(partitions) {
  const delayed = partitions.some(p => p.delayed);
  const headers = ["Partition", "Leader", "Epoch", "Log start", "High watermark", "Last stable", "Offsets"];
  if (delayed) headers.push("Delayed", "Next due");
  return table(headers, partitions.map(p => {
    const row = [p.partition, p.leader, p.leader_epoch, p.log_start ?? "—", p.high_watermark ?? "—",
      p.last_stable ?? "—", p.high_watermark === null ? "—" : (p.high_watermark - p.log_start).toLocaleString()];
    if (delayed) {
      const next = p.delayed && p.delayed.next_due_ms;
      row.push(p.delayed ? p.delayed.pending.toLocaleString() : "—", next ? new Date(next).toISOString() : "—");
    }
    return row;
  }), [0, 1, 2, 3, 4, 5, 6, 7]);
}

// A search of the topic's message index (docs/index.md), when it has one: the
// committed records whose key, header or JSON field has a value.
function searchSection(topic) {
  const indexed = (topic.configs.find(c => c.name === "index.fields") || {}).value || "";
  const fields = indexed.split(",").map(f => f.trim()).filter(Boolean);
  if (!fields.length) return [];
  const found = h("div", { id: "found" });
  const form = h("form", { class: "inline", id: "search", onsubmit: event => { event.preventDefault(); search(topic.name, event.target, found); } },
    h("label", {}, "Field", h("select", { name: "field" }, fields.map(f => h("option", { value: f }, f)))),
    h("label", {}, "Value", h("input", { name: "value", required: true })),
    h("label", {}, "Count", h("input", { name: "limit", type: "number", min: 1, max: 1000, value: 50 })),
    h("label", {}, "Order", h("select", { name: "order" },
      h("option", { value: "newest" }, "newest first"), h("option", { value: "oldest" }, "oldest first"))),
    h("button", { type: "submit" }, "Find"));
  return [h("h2", {}, "Find by value"), form, found];
}

// The query parameter of an index field: key, header.NAME or field.$.path.
function searchParameter(field) {
  if (field.startsWith("header:")) return `header.${field.slice(7)}`;
  if (field.startsWith("value:")) return `field.${field.slice(6)}`;
  return field;
}

async function search(topic, form, target) {
  const data = new FormData(form);
  const params = new URLSearchParams({ limit: data.get("limit") || 50, order: data.get("order") });
  params.set(searchParameter(String(data.get("field"))), data.get("value"));
  try {
    const result = await api(`/topics/${encodeURIComponent(topic)}/messages?${params}`);
    const rows = result.messages.map(m => [
      m.partition, m.offset, new Date(m.timestamp).toISOString(), h("span", {}, shown(m.key)),
      h("span", {}, shown(m.value)), m.headers.map(header => h("div", {}, `${header.key}: `, shown(header.value))),
    ]);
    const cells = table(["Partition", "Offset", "Timestamp", "Key", "Value", "Headers"], rows, [0, 1]);
    for (const row of cells.querySelectorAll("tbody tr")) {
      for (const cell of [...row.children].slice(3)) cell.classList.add("data");
    }
    target.replaceChildren(
      h("p", { class: "muted" }, `${result.messages.length} found; ${result.chunks_read} index chunks and ${result.batches_read} batches read, ${result.scanned_bytes} bytes scanned`),
      cells);
  } catch (error) {
    target.replaceChildren(h("p", { class: "error" }, error.message));
  }
}

async function browse(topic, form, target, offset) {
  const data = new FormData(form);
  const params = new URLSearchParams({ limit: data.get("limit") || 50, encoding: data.get("encoding") });
  if (offset !== undefined) params.set("offset", offset);
  else if (data.get("from") === "offset") params.set("offset", data.get("offset") || 0);
  else if (data.get("from") === "time" && data.get("time")) params.set("timestamp", new Date(data.get("time")).getTime());
  const path = `/topics/${encodeURIComponent(topic)}/partitions/${data.get("partition")}/messages?${params}`;
  try {
    const result = await api(path);
    const rows = result.messages.map(m => [
      m.offset, new Date(m.timestamp).toISOString(), h("span", {}, shown(m.key)), h("span", {}, shown(m.value)),
      m.headers.map(header => h("div", {}, `${header.key}: `, shown(header.value))),
    ]);
    const cells = table(["Offset", "Timestamp", "Key", "Value", "Headers"], rows, [0]);
    for (const row of cells.querySelectorAll("tbody tr")) {
      for (const cell of [...row.children].slice(2)) cell.classList.add("data");
    }
    const more = result.next_offset < result.high_watermark
      ? h("button", { class: "secondary", onclick: () => browse(topic, form, target, result.next_offset) }, `Next page from offset ${result.next_offset}`)
      : h("span", { class: "muted" }, "End of the partition.");
    target.replaceChildren(
      h("p", { class: "muted" }, `${result.messages.length} messages; offsets ${result.log_start} to ${result.high_watermark} (exclusive)`),
      cells, h("p", {}, more));
  } catch (error) {
    target.replaceChildren(h("p", { class: "error" }, error.message));
  }
}

async function groupList() {
  const groups = await api("/groups");
  page.replaceChildren(
    h("h1", {}, "Consumer groups"),
    table(["Group", "Type", "State", "Members", "Lag"], groups.map(g => [
      link(`#/groups/${encodeURIComponent(g.group)}`, g.group), g.group_type,
      h("span", { class: `pill ${g.state}` }, g.state), g.members, g.lag.toLocaleString(),
    ]), [3, 4]));
}

async function groupPage(id) {
  const group = await api(`/groups/${encodeURIComponent(id)}`);
  if (group.group_type === "share") return sharePage(group);
  const total = group.offsets.reduce((n, o) => n + (o.lag || 0), 0);
  page.replaceChildren(
    h("h1", {}, "Group ", group.group, " ", h("span", { class: `pill ${group.state}` }, group.state)),
    h("div", { class: "cards" }, card("Members", group.members.length), card("Total lag", total.toLocaleString()),
      card("Type", group.group_type), card("Protocol", group.protocol || "—")),
    h("h2", {}, "Members"),
    table(["Member", "Client", "Host", "Assigned partitions"], group.members.map(m => [
      m.member_id, m.client_id, m.client_host,
      Object.entries(m.assignment).map(([topic, partitions]) => h("div", {}, `${topic}: ${partitions.join(", ")}`)),
    ])),
    h("h2", {}, "Lag per partition"),
    table(["Topic", "Partition", "Committed", "High watermark", "Lag"], group.offsets.map(o => [
      link(`#/topics/${encodeURIComponent(o.topic)}`, o.topic), o.partition, o.committed,
      o.high_watermark ?? "—", o.lag ?? "—",
    ]), [1, 2, 3, 4]),
    groupActions(group));
}

// A share group (KIP-932): per partition the start offset, the records in flight by
// state and the lag, as `spool group describe` shows them.
function sharePage(group) {
  const parts = group.share_partitions || [];
  const total = parts.reduce((n, p) => n + (p.lag || 0), 0);
  const live = group.members.length > 0;
  page.replaceChildren(
    h("h1", {}, "Group ", group.group, " ", h("span", { class: `pill ${group.state}` }, group.state)),
    h("div", { class: "cards" }, card("Members", group.members.length), card("Total lag", total.toLocaleString()),
      card("Type", "share"), card("Assignor", group.protocol || "—")),
    h("h2", {}, "Members"),
    table(["Member", "Client", "Host", "Assigned partitions"], group.members.map(m => [
      m.member_id, m.client_id, m.client_host,
      Object.entries(m.assignment).map(([topic, partitions]) => h("div", {}, `${topic}: ${partitions.join(", ")}`)),
    ])),
    h("h2", {}, "Share partitions"),
    table(["Topic", "Partition", "Start offset", "Acquired", "Available", "Archived", "Lag"], parts.map(p => [
      link(`#/topics/${encodeURIComponent(p.topic)}`, p.topic), p.partition, p.start_offset,
      p.acquired, p.available, p.archived, p.lag ?? "—",
    ]), [1, 2, 3, 4, 5, 6]),
    h("div", {}, h("h2", {}, "Actions"),
      live ? h("p", { class: "muted" }, "The group has members: stop them to delete it.") : null,
      h("button", { type: "button", class: "danger", id: "delete-group", disabled: live, onclick: () => deleteGroup(group.group) }, "Delete group")));
}

// Reset offsets and delete, as `spool group seek|delete` do: only for a group without
// members (a live group keeps its offsets).
function groupActions(group) {
  const live = group.members.length > 0;
  const topics = [...new Set(group.offsets.map(o => o.topic))];
  const reset = h("form", { class: "inline", id: "reset-offsets", onsubmit: event => { event.preventDefault(); resetOffsets(group.group, event.target); } },
    h("label", {}, "Topic", h("select", { name: "topic" },
      h("option", { value: "" }, "every topic"), topics.map(t => h("option", { value: t }, t)))),
    h("label", {}, "To", h("select", { name: "to" },
      h("option", { value: "earliest" }, "earliest"), h("option", { value: "latest" }, "latest"),
      h("option", { value: "offset" }, "offset"))),
    h("label", {}, "Offset", h("input", { name: "offset", type: "number", min: 0, value: 0, disabled: true })),
    h("button", { type: "submit", disabled: live }, "Reset offsets"),
    h("button", { type: "button", class: "danger", id: "delete-group", disabled: live, onclick: () => deleteGroup(group.group) }, "Delete group"));
  reset.elements.to.addEventListener("change", () => { reset.elements.offset.disabled = reset.elements.to.value !== "offset"; });
  return h("div", {}, h("h2", {}, "Actions"),
    live ? h("p", { class: "muted" }, "The group has members: stop them to reset its offsets or delete it.") : null,
    reset);
}

async function resetOffsets(id, form) {
  const data = new FormData(form);
  const to = data.get("to") === "offset" ? String(data.get("offset") || 0) : data.get("to");
  const request = { to };
  if (data.get("topic")) request.topic = data.get("topic");
  try {
    await api(`/groups/${encodeURIComponent(id)}/offsets`, { method: "POST", body: JSON.stringify(request) });
    toast(`Reset the offsets of ${id} to ${to}`);
    await route();
  } catch (error) {
    toast(error.message, true);
  }
}

async function deleteGroup(id) {
  if (!confirm(`Delete group ${id} and its committed offsets?`)) return;
  try {
    await api(`/groups/${encodeURIComponent(id)}`, { method: "DELETE" });
    toast(`Deleted group ${id}`);
    location.hash = "#/groups";
  } catch (error) {
    toast(error.message, true);
  }
}

// ---- Transaction checkers ---------------------------------------------------

async function checkerList() {
  const checkers = await api("/txn-checkers");
  page.replaceChildren(
    h("h1", {}, "Transaction checkers"),
    h("p", {}, "Asked whether an open transaction committed before it is aborted (add them with ",
      h("code", {}, "spool txn-checker add"), ")."),
    table(["Prefix", "URL", "Headers", "Timeout ms", "Own CA"], checkers.map(c => [
      c.prefix, c.url, c.header_names.join(", ") || "—", c.timeout_ms, c.own_ca ? "yes" : "no",
    ]), [3]));
}

// ---- Mirror links -----------------------------------------------------------

async function mirrorList() {
  const links = await api("/mirrors");
  const sections = links.map(link => h("section", { class: "mirror" },
    h("h2", {}, `${link.name} · ${link.state}`),
    h("p", {}, `From ${link.source}, topics `, h("code", {}, link.topics),
      link.groups ? [", group offsets of ", h("code", {}, link.groups)] : "",
      `. Copied ${link.copied_bytes} bytes; ${link.errors} errors; ${link.offsets_copied} group offsets.`),
    link.error ? h("p", { class: "error" }, link.error) : "",
    link.failed_over.length ? h("p", {}, `Failed over: ${link.failed_over.join(", ")}`) : "",
    table(["Topic", "Partition", "Source end", "Mirror end", "Lag", "Lag s", "Error"],
      link.partitions.map(p => [p.topic, p.partition, p.source_end, p.mirror_end, p.lag_records,
        (p.lag_ms / 1000).toFixed(1), p.error || "—"]), [1, 2, 3, 4, 5])));
  page.replaceChildren(
    h("h1", {}, "Mirror links"),
    h("p", {}, "Topics of other clusters copied here at their own offsets (make them with ",
      h("code", {}, "spool mirror create"), ")."),
    ...(sections.length ? sections : [h("p", {}, "No mirror links.")]));
}

// ---- Schema registry --------------------------------------------------------

async function subjectList() {
  const subjects = await api("/schemas/subjects");
  page.replaceChildren(
    h("h1", {}, "Schemas"),
    h("p", {}, "The schema registry's subjects (Confluent's REST API on ",
      h("code", {}, "schema.registry.listen"), "; register with a serializer or ",
      h("code", {}, "spool schema register"), ")."),
    subjects.length
      ? table(["Subject", "Type", "Versions", "Latest id", "Compatibility"],
        subjects.map(s => [link(`#/schemas/${encodeURIComponent(s.subject)}`, s.subject), s.schema_type,
          s.versions.join(", "), s.latest_id, s.compatibility]), [3])
      : h("p", {}, "No subjects."));
}

async function schemaPage(subject, version) {
  const found = await api(`/schemas/subjects/${encodeURIComponent(subject)}/versions/${encodeURIComponent(version || "latest")}`);
  let text = found.schema;
  try { text = JSON.stringify(JSON.parse(found.schema), null, 2); } catch (_) { /* Protobuf text */ }
  page.replaceChildren(
    h("h1", {}, found.subject),
    h("p", {}, `${found.schema_type} · compatibility ${found.compatibility} · versions `,
      ...found.versions.flatMap((v, i) => [i ? ", " : "",
        v === found.version ? h("strong", {}, String(v))
          : link(`#/schemas/${encodeURIComponent(found.subject)}/${v}`, String(v))])),
    h("h2", {}, `Version ${found.version} · schema id ${found.id}`),
    found.references.length
      ? table(["Reference", "Subject", "Version"], found.references.map(r =>
        [r.name, link(`#/schemas/${encodeURIComponent(r.subject)}/${r.version}`, r.subject), r.version]), [2])
      : "",
    h("pre", { class: "schema" }, text));
}

// ---- Routing ----------------------------------------------------------------

async function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const section = parts[0] || "overview";
  for (const item of document.querySelectorAll("[data-nav]")) {
    item.classList.toggle("active", item.dataset.nav === section);
  }
  try {
    if (section === "topics" && parts[1]) await topicPage(parts[1]);
    else if (section === "topics") await topicList();
    else if (section === "groups" && parts[1]) await groupPage(parts[1]);
    else if (section === "groups") await groupList();
    else if (section === "txn-checkers") await checkerList();
    else if (section === "mirrors") await mirrorList();
    else if (section === "schemas" && parts[1]) await schemaPage(parts[1], parts[2]);
    else if (section === "schemas") await subjectList();
    else await overview();
  } catch (error) {
    page.replaceChildren(h("h1", {}, "Cannot show this page"), h("p", { class: "error" }, error.message));
  }
}

window.addEventListener("hashchange", route);
api("/cluster")
  .then(cluster => { document.getElementById("broker").textContent = `node ${cluster.node_id} · ${cluster.mode}`; })
  .catch(() => {});
route();
