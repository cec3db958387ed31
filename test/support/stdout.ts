/**
 * Keeps what the process writes to `streams` (stdout unless told: log lines, metrics) from now until
 * `restore`, instead of printing it.
 */
export function captureStdout(streams: NodeJS.WriteStream[] = [process.stdout]): { text: () => string; restore: () => void } {
  const written: string[] = [];
  const writes = streams.map((stream) =>
    jest.spyOn(stream, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    }),
  );
  return { text: () => written.join(''), restore: () => writes.forEach((write) => write.mockRestore()) };
}
