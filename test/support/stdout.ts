/** Keeps what the process writes to stdout (log lines, metrics) from now until `restore`, instead of printing it. */
export function captureStdout(): { text: () => string; restore: () => void } {
  const written: string[] = [];
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  return { text: () => written.join(''), restore: () => write.mockRestore() };
}
