// Lints Cypher texts with Neo4j's own front-end (@neo4j-cypher/language-support).
// stdin:  JSON array of {"name": str, "text": str}
// stdout: JSON array of {"name": str, "diagnostics": [{"severity", "message", "line", "character"}]}
// Severity follows the LSP numbers: 1 error, 2 warning, 3 information, 4 hint.
import { lintCypherQuery } from '@neo4j-cypher/language-support';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const queries = JSON.parse(Buffer.concat(chunks).toString('utf8'));

// Neo4j 5 is the production target; no schema is declared, so labels and
// properties are not checked, only syntax and semantics.
const dbSchema = { defaultLanguage: 'CYPHER 5' };

const out = queries.map(({ name, text }) => ({
  name,
  diagnostics: lintCypherQuery(text, dbSchema, { consoleCommandsEnabled: false }).diagnostics.map((d) => ({
    severity: d.severity,
    message: d.message,
    line: d.range.start.line,
    character: d.range.start.character,
  })),
}));
process.stdout.write(JSON.stringify(out));
