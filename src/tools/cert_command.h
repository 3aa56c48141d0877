// `tlsfront cert --config FILE put|get|list|rm|reseal|seal-key`: the
// operator's side of the cluster certificate store ([tls.store];
// tls/store_entry.h has the layout). It reads the store settings (Redis,
// prefix, region, sealing keys) from a node's configuration file and talks
// to the same Redis with blocking hiredis calls (redis_timeout each).
//
//   put [--region R | --global] --name N --chain F --key F [--chain F --key F]
//       [--updated-at NS]   seal and store an entry (one or an ECDSA + RSA pair)
//       after the loader's checks (chain complete and in order, key matches,
//       valid now, N covered by the leaf's SAN): a bad entry is refused here,
//       before any node sees it. The region defaults to the configuration's.
//   get [--region R | --global] --name N   the entry's facts and chain (never the key)
//   list [--region R | --global | --all]   name, key type, expiry, issuer, region, updated_at
//   rm [--region R | --global] --name N    tombstone: every node of the region stops serving it
//   reseal [--region R | --global | --all] every entry sealed again with the first key
//   seal-key --out FILE                    32 random bytes, mode 0600 (no --config needed)
//
// Exit status: 0 done, 1 refused or failed (the reason on stderr), 2 usage.
// Thread affinity: the main thread (a command, not part of the server).
#pragma once

namespace tlsfront::tools {

// `argv[0]` is "cert".
int cert_main(int argc, char** argv);

}  // namespace tlsfront::tools
