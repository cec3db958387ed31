import type { Route } from '../../lib/routes';

export type RouteMatch<R> =
  | { kind: 'found'; route: R; pathParameters: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

/**
 * Matches a request path against API Gateway resource paths: literal parts match exactly
 * (`webhooks:getSharedSecret` is one part), `{name}` matches any one non-empty part.
 */
export function matchRoute<R extends Pick<Route, 'method' | 'path'>>(routes: R[], method: string, path: string): RouteMatch<R> {
  const parts = splitPath(path);
  if (parts === undefined) return { kind: 'not-found' };
  const onPath = routes
    .map((route) => ({ route, pathParameters: matchParts(splitPath(route.path)!, parts) }))
    .filter((candidate): candidate is { route: R; pathParameters: Record<string, string> } => candidate.pathParameters !== undefined);
  if (onPath.length === 0) return { kind: 'not-found' };
  const found = onPath.find(({ route }) => route.method === method);
  if (found) return { kind: 'found', ...found };
  return { kind: 'method-not-allowed', allowed: onPath.map(({ route }) => route.method) };
}

function splitPath(path: string): string[] | undefined {
  try {
    return path.split('/').slice(1).map(decodeURIComponent);
  } catch {
    return undefined; // malformed percent-encoding matches nothing
  }
}

function matchParts(template: string[], parts: string[]): Record<string, string> | undefined {
  if (template.length !== parts.length) return undefined;
  const parameters: Record<string, string> = {};
  for (const [index, part] of template.entries()) {
    const actual = parts[index]!;
    const parameter = /^\{(\w+)\}$/.exec(part)?.[1];
    if (parameter !== undefined && actual !== '') parameters[parameter] = actual;
    else if (part !== actual) return undefined;
  }
  return parameters;
}
