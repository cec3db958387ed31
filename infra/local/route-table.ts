import type { Route } from '../../lib/routes';

export type RouteMatch<R> =
  | { kind: 'found'; route: R; pathParameters: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

/** A resource path part: a literal, or `{name}` standing for any one non-empty part. */
type TemplatePart = { literal: string } | { parameter: string };

/**
 * Matches request paths against API Gateway resource paths: literal parts match exactly
 * (`webhooks:getSharedSecret` is one part), `{name}` matches any one non-empty part, and a path
 * with no parameters takes precedence over one that has them. The templates are parsed once, not on
 * every request, and a request for a path with no parameters, as sent, is one map look-up.
 */
export function routeTable<R extends Pick<Route, 'method' | 'path'>>(routes: R[]): (method: string, path: string) => RouteMatch<R> {
  const parsed = routes.map((route) => ({ route, template: parseTemplate(route.path) }));
  const literal = parsed.filter(({ template }) => template.every((part) => 'literal' in part));
  const compiled = [...literal, ...parsed.filter((entry) => !literal.includes(entry))];
  const withoutParameters = new Map(literal.map(({ route }) => [`${route.method} ${route.path}`, route]));
  return (method, path) => {
    const exact = withoutParameters.get(`${method} ${path}`);
    if (exact) return { kind: 'found', route: exact, pathParameters: {} };
    const parts = splitPath(path);
    if (parts === undefined) return { kind: 'not-found' };
    const allowed: string[] = [];
    for (const { route, template } of compiled) {
      const pathParameters = matchParts(template, parts);
      if (pathParameters === undefined) continue;
      if (route.method === method) return { kind: 'found', route, pathParameters };
      allowed.push(route.method);
    }
    return allowed.length ? { kind: 'method-not-allowed', allowed } : { kind: 'not-found' };
  };
}

function parseTemplate(path: string): TemplatePart[] {
  return path
    .split('/')
    .slice(1)
    .map((part) => {
      const parameter = /^\{(\w+)\}$/.exec(part)?.[1];
      return parameter === undefined ? { literal: part } : { parameter };
    });
}

function splitPath(path: string): string[] | undefined {
  const parts = path.split('/').slice(1);
  if (!path.includes('%')) return parts;
  try {
    return parts.map(decodeURIComponent);
  } catch {
    return undefined; // malformed percent-encoding matches nothing
  }
}

function matchParts(template: TemplatePart[], parts: string[]): Record<string, string> | undefined {
  if (template.length !== parts.length) return undefined;
  const parameters: Record<string, string> = {};
  for (let index = 0; index < template.length; index += 1) {
    const part = template[index]!;
    const actual = parts[index]!;
    if ('parameter' in part) {
      if (actual === '') return undefined;
      parameters[part.parameter] = actual;
    } else if (part.literal !== actual) return undefined;
  }
  return parameters;
}
