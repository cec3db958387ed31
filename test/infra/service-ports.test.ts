import { servicePorts } from '../../infra/local/service-ports';

it("lists the gateway's port and the loopback ports of the store and chains, each once", () => {
  const endpoints = ['http://127.0.0.1:8000', 'http://127.0.0.1:8545', 'http://localhost:9650/ext/bc/C/rpc', 'http://[::1]:7000', 'https://api.avax.network/ext/bc/C/rpc', 'http://10.0.0.5:8545', undefined];
  expect(servicePorts([3000, 8000], endpoints)).toEqual([3000, 8000, 8545, 9650, 7000]);
  expect(servicePorts([3000, undefined], [])).toEqual([3000]);
});
