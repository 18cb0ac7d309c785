"""The launch variables a rank started by a cluster engine (Dask, Spark, Ray) hands to the engine
as arguments (``distributed={"launch_environment": ...}``), in the shape torchrun sets them: one
process per node slot, so LOCAL_RANK 0 of LOCAL_WORLD_SIZE 1 and the node rank = the rank."""

from __future__ import annotations


def rank_environment(rank: int, world: int, token: str, master_addr: str | None = None) -> dict[str, str]:
    """Rank `rank` of `world`, in the run named `token` (the rendezvous keys); MASTER_ADDR when
    given. MASTER_PORT is the caller's: 0 for a rank 0 that publishes the port its store picks."""
    env = {
        "RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
        "GROUP_RANK": str(rank),
        "MIXLE_RUN_TOKEN": token,
        "TORCHELASTIC_RUN_ID": token,
        "TORCHELASTIC_USE_AGENT_STORE": "False",
    }
    if master_addr is not None:
        env["MASTER_ADDR"] = master_addr
    return env
