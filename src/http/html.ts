/**
 * HTML built from templates that escape every value put into them: a page is only ever text from
 * the templates themselves plus escaped values, so a run id, column name or input row holding
 * markup shows as text and never runs.
 */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** What a template may hold: text (escaped), HTML (as is), lists of either, or nothing. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

/** The template tag: `html\`<td>${name}</td>\`` escapes `name`; `false`, null and undefined render nothing. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  values.forEach((value, i) => (out += render(value) + strings[i + 1]));
  return new Html(out);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/**
 * Data for the page script, as `<script type="application/json">`: JSON whose `<`, `>`, `&` and
 * line separators are escaped, so no value can close the element or be read as markup.
 */
export function jsonScript(id: string, data: unknown): Html {
  const json = JSON.stringify(data).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return html`<script type="application/json" id="${id}">
    ${new Html(json)}
  </script>`;
}
