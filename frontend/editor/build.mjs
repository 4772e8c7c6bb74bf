// Bundle src/editor.js (CodeMirror 6 and the `yaml` parser) into one file the pages load from /static/,
// and gather the licenses of everything in it. Run by `make install` (Makefile) after `npm ci`; the
// output is not committed (.gitignore): it is built from package-lock.json's exact versions.
import { build } from "esbuild";
import { readFileSync, writeFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const vendor = join(here, "..", "..", "static", "portal", "vendor");

const result = await build({
  entryPoints: [join(here, "src", "editor.js")],
  outfile: join(vendor, "editor.js"),
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  legalComments: "none", // the licenses go to editor.LICENSE
  metafile: true,
  logLevel: "warning",
});

// Every package that contributed code, with its version and license text.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (match) packages.set(match[1], join(here, "node_modules", match[1]));
}
const sections = [...packages.keys()].sort().map((name) => {
  const root = packages.get(name);
  const meta = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const file = readdirSync(root).find((entry) => /^licen[cs]e/i.test(entry));
  const text = file ? readFileSync(join(root, file), "utf8").trim() : `License: ${meta.license}`;
  return `${"=".repeat(78)}\n${name} ${meta.version} (${meta.license})\n${"=".repeat(78)}\n${text}\n`;
});
writeFileSync(
  join(vendor, "editor.LICENSE"),
  "Licenses of the packages bundled into editor.js (frontend/editor, built by `make install`).\n\n" +
    sections.join("\n"),
);
