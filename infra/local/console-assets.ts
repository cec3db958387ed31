import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { ApiError, methodNotAllowedMessage } from '../../lib/errors';
import { errorResponse } from '../../lib/http/responses';
import { CONSOLE_ASSETS_PATH, CONSOLE_PATH, CONSOLE_SECURITY_HEADERS, IMMUTABLE_CACHE_CONTROL } from '../console-headers';

/** The content types of what Vite writes (scripts, styles, images, fonts); anything else is sent as bytes. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
};

interface ConsoleFile {
  type: string;
  /** Its bytes, base64-encoded once: what a Lambda proxy answer carries. */
  base64: string;
}

const METHODS = ['GET', 'HEAD'];

/**
 * The console (console/dist, built by infra/console-build.ts), served without an API key as CloudFront
 * serves it on AWS (infra/console-hosting.ts): `/` and `/console` redirect to `/console/`; files
 * under `/console/assets/` (hashed names) are cached for good; any other extensionless path is a
 * page of the single-page app, answered with index.html. Files are looked up by name among those the
 * build wrote, never by building a file system path from the request. Returns undefined for paths
 * outside the console.
 */
export function consoleAssets(distDir: string): (method: string, pathname: string) => APIGatewayProxyResult | undefined {
  // Read whole on first use and kept: a later build replacing dist cannot mix two builds' files.
  let files: Map<string, ConsoleFile> | undefined;
  return (method, pathname) => {
    const inConsole = pathname.startsWith(CONSOLE_PATH);
    if (pathname !== '/' && pathname !== '/console' && !inConsole) return undefined;
    if (!METHODS.includes(method)) return consoleError(new ApiError(405, methodNotAllowedMessage(METHODS), { Allow: METHODS.join(', ') }));
    if (!inConsole) return redirect(pathname === '/' ? 302 : 301, CONSOLE_PATH);
    files ??= readBuild(distDir);
    if (!files) return consoleError(new ApiError(503, `The console is not built: ${distDir} has no index.html (npm start builds it)`));
    const name = fileName(pathname.slice(CONSOLE_PATH.length));
    const file = name === undefined ? undefined : files.get(name);
    if (file) return fileResponse(file, name!.startsWith('assets/') ? IMMUTABLE_CACHE_CONTROL : 'no-cache');
    if (name !== undefined && !pathname.startsWith(CONSOLE_ASSETS_PATH) && path.posix.extname(name) === '') {
      return fileResponse(files.get('index.html')!, 'no-cache');
    }
    return consoleError(new ApiError(404, `No file at ${pathname} in the console`));
  };
}

/**
 * The percent-decoded path within the console; undefined when it could name nothing the build wrote:
 * a malformed encoding, a NUL, a backslash or a `..` segment (answered 404, not as a page).
 */
function fileName(encoded: string): string | undefined {
  let name: string;
  try {
    name = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  return /[\0\\]/.test(name) || name.split('/').includes('..') ? undefined : name;
}

/** Every file the build wrote (its hash file aside), by its path relative to dist; undefined when there is no build. */
function readBuild(distDir: string): Map<string, ConsoleFile> | undefined {
  let names: string[];
  try {
    names = readdirSync(distDir, { recursive: true, encoding: 'utf8' });
  } catch {
    return undefined;
  }
  const files = new Map<string, ConsoleFile>();
  for (const name of names) {
    const relative = name.split(path.sep).join('/');
    if (relative.split('/').some((part) => part.startsWith('.'))) continue;
    try {
      files.set(relative, { type: CONTENT_TYPES[path.extname(relative)] ?? 'application/octet-stream', base64: readFileSync(path.join(distDir, name)).toString('base64') });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EISDIR') continue;
      // The build was replaced while being read: tried again on the next request.
      return undefined;
    }
  }
  return files.has('index.html') ? files : undefined;
}

function fileResponse(file: ConsoleFile, cacheControl: string): APIGatewayProxyResult {
  return {
    statusCode: 200,
    headers: { ...CONSOLE_SECURITY_HEADERS, 'Content-Type': file.type, 'Cache-Control': cacheControl },
    // Also for HEAD: the body sets Content-Length, and Node sends no body in answer to a HEAD.
    body: file.base64,
    isBase64Encoded: true,
  };
}

function redirect(statusCode: 301 | 302, location: string): APIGatewayProxyResult {
  return { statusCode, headers: { ...CONSOLE_SECURITY_HEADERS, Location: location, 'Cache-Control': 'no-cache' }, body: '' };
}

function consoleError(error: ApiError): APIGatewayProxyResult {
  const response = errorResponse(error);
  return { ...response, headers: { ...response.headers, ...CONSOLE_SECURITY_HEADERS, 'Cache-Control': 'no-cache' } };
}
