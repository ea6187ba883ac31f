"""The policy library: every strategy a person might deploy, with the file and hash it must keep.

An entry is published from the best trial of every finished research session (a PPO policy zip
for ``ppo_only`` and ``unified``; for ``cufolio_only`` the resolved config, since a Mean-CVaR
strategy is a pure function of its knobs) and from every ``alphaloop train`` run. Zips are
copied into a library-owned file named by their sha256 prefix; a load checks the hash first.
One entry at a time is active: the pointer file in the alphaloop home, written atomically.

Modules: :mod:`.files` (copies, hashes, verified loads), :mod:`.pointer` (the pointer file),
:mod:`.activation` (activate, the ``auto_activate`` rule), :mod:`.publish` (new entries).
"""

from alphaloop.library.activation import (
    activate,
    active_policy_id,
    auto_activate,
    no_go,
)
from alphaloop.library.files import (
    copy_into_library,
    library_dir,
    load_ppo,
    sha256_file,
    verified_policy_file,
)
from alphaloop.library.pointer import read_pointer, write_pointer
from alphaloop.library.publish import KIND_OF_MODE, publish_trial, try_publish

__all__ = [
    "KIND_OF_MODE",
    "activate",
    "active_policy_id",
    "auto_activate",
    "copy_into_library",
    "library_dir",
    "load_ppo",
    "no_go",
    "publish_trial",
    "read_pointer",
    "sha256_file",
    "try_publish",
    "verified_policy_file",
    "write_pointer",
]
