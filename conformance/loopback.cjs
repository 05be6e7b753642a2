// Preloaded into the conformance harness (NODE_OPTIONS=--require): its mock servers call
// listen(0) with no host, which binds every interface, and read server.address()
// right away. Giving listen() a host would make Node resolve it asynchronously (address()
// is then null), so the host is filled in at Node's synchronous bind step instead.
"use strict";
const net = require("net");
const bind = net.Server.prototype._listen2;
net.Server.prototype._listen2 = function (address, port, addressType, ...rest) {
  const [, fd] = rest;
  if (!address && typeof fd !== "number") {
    return bind.call(this, "127.0.0.1", port, 4, ...rest);
  }
  return bind.call(this, address, port, addressType, ...rest);
};
