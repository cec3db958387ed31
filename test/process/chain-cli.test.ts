import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { decodeEventLog, getAddress } from 'viem';
import { DevToken } from '../../infra/dev-contracts.generated';
import { randomAddress } from '../support/factories';
import { useDevChain } from '../support/dev-chain';

const ROOT = path.resolve(__dirname, '../..');
const chain = useDevChain();

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'infra/chain-cli.ts', ...args, '--rpc', chain.rpcUrl()], { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const transactionOf = (stdout: string) => /transaction (0x[0-9a-f]{64})/.exec(stdout)![1]!;
const balance = async (address: string) => BigInt(await chain.rpc('eth_getBalance', [address, 'latest']));

describe('npm run chain', () => {
  test('accounts lists the ten funded dev accounts', async () => {
    const { code, stdout } = await cli('accounts');
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toHaveLength(10);
    expect(stdout).toContain('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266  10000 ETH');
  });

  test('accounts piped into a reader that stops after the first line (| head -1) exits 0 without a stack trace', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'infra/chain-cli.ts', 'accounts', '--rpc', chain.rpcUrl()], { cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  test('send moves ETH and prints the transaction and its block', async () => {
    const to = randomAddress();
    const { code, stdout } = await cli('send', '--to', to, '--value', '1.5');
    expect(code).toBe(0);
    expect(stdout).toMatch(/in block \d+/);
    expect(await balance(to)).toBe(1_500_000_000_000_000_000n);
  });

  test('deploy-token then transfer-token moves DEV with a Transfer log', async () => {
    const deployed = await cli('deploy-token');
    const token = /address (0x[0-9a-fA-F]{40})/.exec(deployed.stdout)![1]!;
    const to = randomAddress();
    const { code, stdout } = await cli('transfer-token', '--token', token, '--to', to, '--amount', '10');
    expect(code).toBe(0);
    const receipt = await chain.rpc('eth_getTransactionReceipt', [transactionOf(stdout)]);
    const event = decodeEventLog({ abi: DevToken.abi, data: receipt.logs[0].data, topics: receipt.logs[0].topics });
    expect(event).toMatchObject({ eventName: 'Transfer', args: { to: getAddress(to), value: 10_000_000_000_000_000_000n } });
  });

  test('forward sends value through a contract: the recipient is paid by an internal call', async () => {
    const to = randomAddress();
    const { code, stdout } = await cli('forward', '--to', to, '--value', '0.5');
    expect(code).toBe(0);
    expect(await balance(to)).toBe(500_000_000_000_000_000n);
    const trace = await chain.rpc('debug_traceTransaction', [transactionOf(stdout.split('\n').slice(3).join('\n')), { tracer: 'callTracer' }]);
    expect(trace.calls[0].to).toBe(to);
  });

  test('mint-nft mints an ERC-721 to the address', async () => {
    const to = randomAddress();
    const { code, stdout } = await cli('mint-nft', '--to', to);
    expect(code).toBe(0);
    expect(stdout).toContain(`minted an NFT`);
  });

  test('bad input and no node are one line on stderr and exit code 1', async () => {
    const bad = await cli('send', '--to', '0xzz', '--value', '1');
    expect(bad.code).toBe(1);
    expect(bad.stderr.split('\n')[0]).toBe("--to must be an address (0x and 40 hex digits), got '0xzz'");
    const unknown = await cli('teleport');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown command 'teleport'");
    const { code, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'infra/chain-cli.ts', 'accounts', '--rpc', 'http://127.0.0.1:9'], { cwd: ROOT }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('no dev chain at http://127.0.0.1:9: is npm start running (with its dev chain), or is --rpc right?');
  });
});
