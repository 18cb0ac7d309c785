"""mixle.utils.parallel: the planning layer's bindings — JSON documents, row and component plans,
the process mesh, attestation, the backend registry and the error types."""

import json
import math
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mixle
from mixle import _core
from mixle.utils import parallel as P


def cpu(name, throughput=1.0, memory_bytes=None):
    return P.DeviceSpec(name, throughput=throughput, memory_bytes=memory_bytes)


@pytest.fixture(scope="module")
def diag5():
    """A fitted 5-component diagonal GaussianMixture over 3 columns."""
    X = np.random.default_rng(0).normal(size=(400, 3))
    return mixle.GaussianMixture(5, covariance_type="diag", random_state=0).fit(X)


# ---- JSON documents ---------------------------------------------------------------------------


def test_resources_json_round_trips_are_the_native_documents(tmp_path):
    r = P.Resources.from_specs(
        [
            P.DeviceSpec("cpu:0", memory_bytes=1 << 30, throughput=1 / 3, precision="fp32", node_id=0, local_rank=0),
            P.DeviceSpec("cuda:0", kind="cuda", engine="cuda", memory_bytes=80 << 30, throughput=10.0, node_id=0,
                         local_rank=0, global_rank=1, product="NVIDIA H200", compute_units=132),
        ]
    )
    doc = r.to_json()
    # Through Python dicts and back, the native document is unchanged, calibrated doubles included.
    assert P.Resources.from_dict(json.loads(doc)).to_json() == doc
    assert P.Resources.from_json(doc) == r
    assert r.to_dict() == json.loads(doc)
    assert json.loads(r.to_json(indent=2)) == json.loads(doc)
    assert json.loads(r.to_json(sort_keys=True, indent=None)) == json.loads(doc)
    assert r.devices[0].throughput == 1 / 3 and r.devices[0].precision == "float32"
    # The reference's nine keys always, mixle's two only when set.
    nine = {"name", "kind", "memory_bytes", "engine", "throughput", "precision", "node_id", "local_rank",
            "global_rank"}
    assert set(r.devices[0].to_dict()) == nine
    assert set(r.devices[1].to_dict()) == nine | {"product", "compute_units"}
    assert P.DeviceSpec.from_dict(r.devices[1].to_dict()) == r.devices[1]
    path = tmp_path / "resources.json"
    r.save(path)
    assert json.loads(path.read_text()) == json.loads(doc) and P.Resources.load(path) == r
    r.save(str(path), indent=1)
    assert P.Resources.load(str(path)) == r
    for obj in (r, r.devices[1]):
        assert pickle.loads(pickle.dumps(obj)) == obj and hash(pickle.loads(pickle.dumps(obj))) == hash(obj)


def test_reference_shaped_document_is_read_with_defaults():
    r = P.Resources.from_dict({"devices": [{"name": "a"}, {"name": "b", "throughput": 3, "memory_bytes": 1000}]})
    a, b = r.devices
    assert (a.kind, a.engine, a.throughput, a.memory_bytes, a.global_rank) == ("cpu", "cpu", 1.0, None, None)
    assert (b.throughput, b.memory_bytes) == (3.0, 1000) and r.fastest() is not None and r.fastest().name == "b"
    with pytest.raises(ValueError, match="devices"):
        P.Resources.from_dict({"device": []})


def test_resources_and_placements_are_validated():
    with pytest.raises(ValueError, match="throughput"):
        P.DeviceSpec("x", throughput=math.nan)
    with pytest.raises(ValueError, match="memory_bytes"):
        P.DeviceSpec("x", memory_bytes=0)
    with pytest.raises(ValueError, match="memory_bytes"):
        P.DeviceSpec("x", memory_bytes=True)
    with pytest.raises(ValueError):
        P.Resources([cpu("a"), cpu("a")])
    with pytest.raises(ValueError, match="physical device"):
        P.Resources([P.DeviceSpec("a", node_id=0, local_rank=0), P.DeviceSpec("b", node_id=0, local_rank=0)])
    with pytest.raises(ValueError):
        P.Resources([])
    r = P.Resources([cpu("a"), cpu("b", memory_bytes=100)])
    a, b = r.devices

    def placement(*ranges, resources=r, total_rows=10):
        shards = [P.PlacementShard(d, start, stop) for d, start, stop in ranges]
        return P.Placement(shards, total_rows, 1.0, 1.0, 0, 0, 8, resources)

    placement((a, 0, 4), (b, 4, 10))
    with pytest.raises(ValueError, match="overlap"):
        placement((a, 0, 5), (b, 4, 10))
    with pytest.raises(ValueError, match="gap"):
        placement((a, 0, 3), (b, 4, 10))
    with pytest.raises(ValueError, match="declared resources"):
        placement((a, 0, 4), (cpu("elsewhere"), 4, 10))
    with pytest.raises(MemoryError):
        P.Placement([P.PlacementShard(b, 0, 10, encoded_bytes=101)], 10, 1.0, 1.0, 0, 0, 8, r)
    with pytest.raises(TypeError):
        P.PlacementShard(a, 0, 2.5)
    with pytest.raises(ValueError):
        P.PlacementShard(a, 5, 4)


def test_contract_documents_round_trip():
    plan = P.ParallelPlan(dp_replicate=2, dp_shard=2, tp=2, microbatches=4)
    update = P.DistributedUpdate("w", P.PayloadKind.GRADIENT, P.CollectiveKind.REDUCE_SCATTER,
                                 (P.ParallelAxis.DP_SHARD,), P.StateLayout.SHARDED, False, notes=("n",),
                                 contract_exact=True, determinism_observed=True, maximum_absolute_error=0.0,
                                 maximum_relative_error=1e-12, numerics_evidence_id="run-7",
                                 numerics_sample_count=3)
    layout = P.ParameterLayout("w", (4, 0), (("tp", "shard(0)"),), "tied", P.StateLayout.SHARDED)
    receipt = P.StepReceipt(3, 0.25, 8, 32, 2, 2, 4, "em", "fp64", collective_bytes=128, extra={"k": 1.5, "s": "x"},
                            global_examples_observed=30)
    for obj, text, read in (
        (plan, plan.to_json(), P.ParallelPlan.from_json),
        (update, update.to_json(), P.DistributedUpdate.from_json),
        (layout, layout.to_json(), P.ParameterLayout.from_json),
        (receipt, receipt.to_json_line(), P.StepReceipt.from_json),
    ):
        again = read(text)
        assert again == obj and pickle.loads(pickle.dumps(obj)) == obj and hash(again) == hash(obj)
    assert update.as_dict()["collective"] == "reduce_scatter" and update.mesh_axes == (P.ParallelAxis.DP_SHARD,)
    assert layout.as_dict()["placements"] == {"tp": "shard(0)"} and layout.optimizer_state is P.StateLayout.SHARDED
    assert plan.as_dict() == {"dp_replicate": 2, "dp_shard": 2, "tp": 2, "pp": 1, "cp": 1, "ep": 1, "etp": 1,
                              "microbatches": 4, "gradient_accumulation_steps": 1, "world_size": 8,
                              "data_parallel_size": 4}
    assert receipt.global_examples == 30 and receipt.global_tokens == 32 * 4 and receipt.extra == {"k": 1.5, "s": "x"}


# ---- plan() -----------------------------------------------------------------------------------


def test_plan_splits_rows_by_throughput():
    r = P.Resources.from_specs([cpu("slow", 1.0), cpu("fast", 3.0)])
    X = np.zeros((100, 4))
    placement = P.plan(X, resources=r)
    assert [(s.device.name, s.start, s.stop) for s in placement.shards] == [("slow", 0, 25), ("fast", 25, 100)]
    assert placement.total_rows == 100 and placement.encoded_row_bytes == 4 * 8 and placement.dtype_bytes == 8
    assert placement.resources == r and placement.for_device("fast") == (placement.shards[1],)
    # num_chunks: near-equal ranges laid out as blocks in device order.
    blocks = P.plan(X, resources=r, num_chunks=4).shards
    assert [s.device.name for s in blocks] == ["slow", "fast", "fast", "fast"]
    assert [(s.start, s.stop) for s in blocks] == [(0, 25), (25, 50), (50, 75), (75, 100)]
    # float32 data are 4 bytes a value; no data: one empty shard on the fastest device.
    assert P.plan(X.astype(np.float32), resources=r).encoded_row_bytes == 16
    empty = P.plan(num_chunks=3, resources=r)
    assert [(s.device.name, s.start, s.stop) for s in empty.shards] == [("fast", 0, 0)]
    assert str(placement).startswith("Placement(") and "fast[25:100]" in str(placement)
    assert P.Placement.from_json(placement.to_json()) == placement
    assert placement.to_dict()["shards"][1] == {"device": "fast", "kind": "cpu", "engine": "cpu", "start": 25,
                                                "stop": 100, "sub_chunks": 1, "encoded_bytes": 3000,
                                                "transient_bytes": 750}
    with pytest.raises(ValueError, match="data or num_chunks"):
        P.plan(resources=r)
    with pytest.raises(ValueError, match="sub_chunks"):
        P.plan(X, resources=r, sub_chunks=0)


def test_plan_respects_memory_caps():
    r = P.Resources.from_specs([cpu("small", memory_bytes=4000)])
    placement = P.plan(np.zeros((200, 2)), resources=r, safety_factor=1.0, rows_per_chunk=0)
    assert len(placement.shards) > 1
    assert placement.shards[0].start == 0 and placement.shards[-1].stop == 200
    for a, b in zip(placement.shards, placement.shards[1:]):
        assert a.stop == b.start
    assert all(s.size > 0 and s.total_bytes <= 4000 for s in placement.shards)
    placement.validate(total_rows=200, resources=r)
    with pytest.raises(ValueError, match="total_rows"):
        placement.validate(total_rows=201)
    with pytest.raises(MemoryError, match="fixed model/statistic state"):
        P.plan(np.zeros((10, 2)), model=P.ModelSummary(4, [("gaussian_diag", 2)]),
               resources=P.Resources.single_cpu(memory_bytes=1))


def test_plan_sizes_the_model_from_a_fitted_or_unfitted_estimator(diag5):
    K, D = 5, 3
    X = np.zeros((1000, D))
    fitted = P.plan(X, model=diag5)
    assert fitted.model_bytes == 8 * K * (1 + 2 * D)
    assert fitted.statistic_bytes == 8 * (K * (1 + 2 * D) + 2)
    assert fitted.transient_row_bytes == K * 8  # the estimator's default precision, fp64
    unfitted = P.plan(X, estimator=mixle.GaussianMixture(K, covariance_type="diag", precision="fp32"))
    assert (unfitted.model_bytes, unfitted.dtype_bytes) == (fitted.model_bytes, 4)
    layout = P.plan(X, estimator=mixle.MixtureModel(2, layout="gaussian_diag:0-2,poisson:2-3"))
    assert layout.model_bytes == 8 * 2 * (1 + 2 * 2 + 1)
    with pytest.raises(NotImplementedError, match="encoder"):
        P.plan(X, encoder=object())
    with pytest.raises(TypeError, match="model"):
        P.plan(X, model="not a model")


# ---- model_sharding_plan() --------------------------------------------------------------------


def test_model_sharding_plan_gives_contiguous_component_ranges(diag5):
    r = P.Resources.from_specs([cpu("slow", 1.0), cpu("fast", 3.0)])
    shards = P.model_sharding_plan(diag5, r)
    assert [(s.device.name, s.component_start, s.component_stop) for s in shards] == [("slow", 0, 1), ("fast", 1, 5)]
    assert shards[1].parameter_bytes > shards[0].parameter_bytes and shards[1].num_components == 4
    assert [s.num_components for s in P.model_sharding_plan(diag5, P.Resources.local(4), min_components_per_shard=2)] \
        == [3, 2]
    # Any K and any throughputs: contiguous ranges covering [0, K), each ≥ the minimum.
    many = P.Resources.from_specs([cpu(f"d{i}", t) for i, t in enumerate([1.0, 5.0, 2.5, 0.5, 3.0])])
    for K in (1, 2, 7, 13, 40):
        for m in (1, 2, 3):
            if m > K:
                continue
            shards = P.model_sharding_plan(P.ModelSummary(K, [("categorical", 2, 4)]), many,
                                           min_components_per_shard=m)
            assert shards[0].component_start == 0 and shards[-1].component_stop == K
            assert all(a.component_stop == b.component_start for a, b in zip(shards, shards[1:]))
            assert all(s.num_components >= m for s in shards)
    with pytest.raises(ValueError, match="cannot exceed"):
        P.model_sharding_plan(diag5, r, min_components_per_shard=6)
    with pytest.raises(ValueError, match="components"):
        P.model_sharding_plan(diag5, r, axis="factors")
    with pytest.raises(MemoryError, match="capacity"):
        P.model_sharding_plan(diag5, P.Resources.single_cpu(memory_bytes=1))
    assert P.ModelShard.from_json(shards[0].to_json()) == shards[0]


def test_auto_parallel_estimator_is_data_parallel_or_refuses(diag5):
    est, placement = P.auto_parallel_estimator(diag5, diag5, P.Resources.local(2), n_data=1000)
    assert est is diag5 and placement.total_rows == 1000 and len(placement.shards) == 2
    tight = P.Resources.local(2, memory_bytes=800)  # 400 bytes each: the 5-component model does not fit
    with pytest.raises(P.UnrealizedModelPlacementError) as raised:
        P.auto_parallel_estimator(diag5, diag5, tight, n_data=100)
    shards = raised.value.plan
    assert [(s.component_start, s.component_stop) for s in shards] == [(0, 3), (3, 5)]
    assert "--shard-components 2" in str(raised.value)
    again = pickle.loads(pickle.dumps(raised.value))
    assert again.plan == shards and str(again) == str(raised.value)


# ---- ParallelPlan and attestation -------------------------------------------------------------


def test_parallel_plan_world_size_and_mesh():
    plan = P.ParallelPlan(dp_replicate=8, tp=2, pp=2, cp=2, ep=4, etp=2)
    assert plan.world_size == 64 and plan.data_parallel_size == 8
    assert plan.mesh == (("dp_replicate", "tp", "pp", "cp"), (8, 2, 2, 2))
    assert plan.active_axes == (P.ParallelAxis.DP_REPLICATE, P.ParallelAxis.TP, P.ParallelAxis.PP,
                                P.ParallelAxis.CP, P.ParallelAxis.EP, P.ParallelAxis.ETP)
    assert plan.size("ep") == plan.size(P.ParallelAxis.EP) == 4
    assert P.ParallelPlan().mesh == (("dp_replicate",), (1,)) and P.ParallelPlan().world_size == 1
    assert P.ParallelPlan(dp_shard=np.int64(3)).dp_shard == 3
    for bad in (1.9, True, 0, -1, 2.0):
        with pytest.raises(ValueError, match="tp"):
            P.ParallelPlan(tp=bad)
    with pytest.raises(ValueError, match="expert parallelism must divide"):
        P.ParallelPlan(dp_replicate=3, ep=2)
    plan.validate_world_size(64)
    for bad in (63, 1.9, True, 0):
        with pytest.raises(ValueError):
            plan.validate_world_size(bad)
    with pytest.raises(ValueError, match="not known"):
        plan.size("xp")


def test_attest_worker_coordinate():
    plan = P.ParallelPlan(dp_replicate=2, tp=2)
    coords = [dict(P.attest_worker_coordinate(plan, actual_world_size=4, rank=r).coordinate) for r in range(4)]
    assert [(c["dp_replicate"], c["tp"]) for c in coords] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(c["dp_shard"] == c["pp"] == c["cp"] == 0 for c in coords)
    a = P.attest_worker_coordinate(plan, actual_world_size=4, rank=3)
    assert a.rank == 3 and a.world_size == 4 and list(a.as_dict()["coordinate"]) == ["dp_replicate", "dp_shard",
                                                                                      "tp", "pp", "cp"]
    cube = P.ParallelPlan(dp_replicate=2, dp_shard=3, tp=2, pp=2, cp=5)
    seen = {P.attest_worker_coordinate(cube, actual_world_size=120, rank=r).coordinate for r in range(120)}
    assert len(seen) == 120
    with pytest.raises(ValueError, match="world_size=4"):
        P.attest_worker_coordinate(plan, actual_world_size=3, rank=0)
    for bad_rank in (4, -1, True, 1.0):
        with pytest.raises(ValueError, match="rank"):
            P.attest_worker_coordinate(plan, actual_world_size=4, rank=bad_rank)
    with pytest.raises(TypeError):
        P.attest_worker_coordinate({"tp": 2}, actual_world_size=2, rank=0)
    with pytest.raises(TypeError):
        P.attest_worker_coordinate(plan, 4, 0)  # keyword-only, as in the reference


# ---- contracts' validation --------------------------------------------------------------------


def test_contract_validation():
    ok = dict(node_id="w", payload=P.PayloadKind.GRADIENT, collective=P.CollectiveKind.ALL_REDUCE,
              mesh_axes=(P.ParallelAxis.DP_REPLICATE,), state_layout=P.StateLayout.REPLICATED, exact=False)
    P.DistributedUpdate(**ok)
    with pytest.raises(ValueError, match="exactness"):
        P.DistributedUpdate(**{**ok, "exact": True})
    with pytest.raises(TypeError):
        P.DistributedUpdate(**{**ok, "payload": "gradient"})
    with pytest.raises(ValueError):
        P.DistributedUpdate(**{**ok, "mesh_axes": (P.ParallelAxis.TP, P.ParallelAxis.TP)})
    with pytest.raises(ValueError):
        P.DistributedUpdate(**ok, numerics_sample_count=-1)
    with pytest.raises(ValueError):
        P.DistributedUpdate(**ok, numerics_evidence_id="e", numerics_sample_count=2)  # bounds missing
    for shape in ((2.5,), (-1,), (True,)):
        with pytest.raises(ValueError):
            P.ParameterLayout("w", shape)
    with pytest.raises(TypeError):
        P.ParameterLayout("w", [2])
    with pytest.raises(ValueError):
        P.ParameterLayout("w", (2,), (("tp", "a"), ("tp", "b")))
    receipt = dict(step=0, loss=1.0, local_examples=1, local_tokens=1, microbatches=1, accumulation_steps=1,
                   data_parallel_size=1, optimizer="em", precision="fp64")
    P.StepReceipt(**receipt)
    for field, bad in (("loss", -1.0), ("loss", math.nan), ("step", 1.5), ("local_examples", -1),
                       ("collective_bytes", -1)):
        with pytest.raises(ValueError):
            P.StepReceipt(**{**receipt, field: bad})
    with pytest.raises(TypeError):
        P.StepReceipt(**{**receipt, "loss": True})
    assert str(P.ParallelAxis.DP_SHARD) == "dp_shard" and P.StateLayout("offloaded") is P.StateLayout.OFFLOADED
    assert [c.value for c in P.CollectiveKind] == ["none", "all_reduce", "reduce_scatter", "all_gather",
                                                   "all_to_all", "broadcast", "p2p", "custom"]


def test_backend_capabilities_validate():
    caps = P.BackendCapabilities("native", {P.ParallelAxis.DP_REPLICATE, "tp", "cp"},
                                 incompatible_axis_sets=({"tp", "cp"},))
    assert caps.precisions == frozenset({"fp32", "bf16"}) and P.ParallelAxis.TP in caps.axes
    caps.validate(P.ParallelPlan(dp_replicate=2, tp=2))
    with pytest.raises(NotImplementedError, match="pp"):
        caps.validate(P.ParallelPlan(pp=2))
    with pytest.raises(P.UnrealizedModelPlacementError, match="cannot combine"):
        caps.validate(P.ParallelPlan(tp=2, cp=2))
    with pytest.raises(ValueError, match="precision"):
        caps.validate(P.ParallelPlan(), precision="fp8")
    assert caps.as_dict()["axes"] == ["cp", "dp_replicate", "tp"]


# ---- registry ---------------------------------------------------------------------------------


class _Backend:
    def __init__(self, name="x"):
        self.capabilities = P.BackendCapabilities(name, {"dp_replicate"})


def test_registry_refuses_duplicates_unless_override():
    first, second = _Backend(), _Backend()
    P.register_training_backend(" Test-Dup ", first)
    P.register_training_backend("test_dup", first)  # the identical object again: no-op
    with pytest.raises(ValueError, match="already registered"):
        P.register_training_backend("TEST_DUP", second)
    assert P.get_training_backend("test-dup") is first
    P.register_training_backend("test_dup", second, override=True)
    assert P.get_training_backend("test_dup") is second
    assert "test_dup" in P.available_training_backends()
    with pytest.raises(ValueError, match="already registered"):
        P.register_training_backend("gloo", first)  # a built-in
    with pytest.raises(ValueError, match="blank"):
        P.register_training_backend("  ", first)
    with pytest.raises(ValueError, match="not registered.*gloo"):
        P.get_training_backend("no-such-backend")


def test_registry_lazy_factories_and_builtins():
    calls = []

    def factory():
        calls.append(1)
        return _Backend("lazy")

    P.register_training_backend("test-lazy", factory)
    assert calls == []
    got = P.get_training_backend("test_lazy")
    assert got is P.get_training_backend("TEST-LAZY") and calls == [1]
    P.register_training_backend("test-junk", lambda: 42)
    with pytest.raises(TypeError, match="capabilities"):
        P.get_training_backend("test-junk")
    gloo = P.get_training_backend("gloo")
    assert gloo is P.get_training_backend("Gloo") and gloo.capabilities.name == "gloo"
    gloo.capabilities.validate(P.ParallelPlan(dp_replicate=2, tp=2))  # data groups × component shards
    with pytest.raises(NotImplementedError, match="pp"):
        gloo.capabilities.validate(P.ParallelPlan(pp=2))
    with pytest.raises(NotImplementedError, match="world_size=1"):
        P.get_training_backend("single").capabilities.validate(P.ParallelPlan(dp_replicate=2))
    assert {"single", "gloo", "mpi", "nccl", "lightning_fabric", "ray_train"} <= set(P.available_training_backends())


# ---- constructors that read live objects and the environment ----------------------------------


def test_resources_from_orchestrator_objects():
    class Comm:
        def Get_size(self):
            return 3

    class Client:
        def scheduler_info(self):
            return {"workers": {"tcp://10.0.0.2:1": {"nthreads": 4, "memory_limit": 2000},
                                "tcp://10.0.0.1:1": {"nthreads": 2, "memory_limit": 1000}}}

    class SparkContext:
        defaultParallelism = 5

    mpi = P.Resources.from_mpi(Comm(), memory_bytes=900)
    assert [d.memory_bytes for d in mpi.devices] == [300] * 3 and mpi.devices[2].name == "mpi:2"
    dask = P.Resources.from_dask(Client())
    assert [(d.name, d.throughput, d.memory_bytes) for d in dask.devices] == [
        ("dask:tcp://10.0.0.1:1", 2.0, 1000), ("dask:tcp://10.0.0.2:1", 4.0, 2000)]
    assert P.Resources.from_dask(Client().scheduler_info()) == dask
    assert P.Resources.from_dask(json.dumps(Client().scheduler_info())) == dask
    with pytest.raises(TypeError, match="scheduler_info"):
        P.Resources.from_dask(object())
    spark = P.Resources.from_spark(SparkContext(), memory_bytes=5000)
    assert [d.name for d in spark.devices] == [f"spark:{i}" for i in range(5)]
    assert {d.memory_bytes for d in spark.devices} == {1000}
    assert len(P.Resources.from_spark({"defaultParallelism": 0}).devices) == 1
    assert len(P.Resources.local(num_cpus=3).devices) == 3 and P.Resources.single_cpu().devices[0].name == "cpu:0"


def test_resources_from_launcher_environment(monkeypatch):
    for var in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(var, raising=False)
    assert len(P.Resources.from_mpi().devices) == 1
    monkeypatch.setenv("PMI_SIZE", "3")
    assert len(P.Resources.from_mpi().devices) == 3

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match="LOCAL_WORLD_SIZE"):
        P.Resources.from_torchrun()
    for var, value in (("WORLD_SIZE", "4"), ("LOCAL_WORLD_SIZE", "2"), ("RANK", "2"), ("LOCAL_RANK", "0"),
                       ("GROUP_RANK", "1")):
        monkeypatch.setenv(var, value)
    gpus = [d for d in P.Resources.discover().devices if d.kind == "cuda"]
    if len(gpus) == 1:  # a CUDA build on a one-GPU machine: two local ranks would share it
        with pytest.raises(ValueError, match="GPU"):
            P.Resources.from_torchrun()
        return
    world = P.Resources.from_torchrun(memory_bytes=None if gpus else 4000).devices
    assert len({d.name for d in world}) == 4
    assert [(d.node_id, d.local_rank, d.global_rank) for d in world] == [(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    if not gpus:
        assert world[3].name == "torchrun-node:1:cpu:1" and world[3].memory_bytes == 2000


def test_importing_pulls_in_no_optional_dependency(tmp_path):
    code = ("import sys, mixle.utils.parallel as p; p.Resources.from_spark({'defaultParallelism': 2}); "
            "print(sorted(m for m in ('dask', 'distributed', 'pyspark', 'mpi4py', 'torch', 'ray', 'lightning') "
            "if m in sys.modules))")
    # Run outside python/, so that the installed package is imported, not the source folder.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert out.strip() == "[]"


# ---- errors -----------------------------------------------------------------------------------


def test_errors_have_the_reference_base_classes():
    assert P.UnrealizedModelPlacementError.__bases__ == (RuntimeError,)
    assert P.EncodedDataControlConflictError.__bases__ == (ValueError,)
    assert issubclass(P.UnsupportedParallelismError, NotImplementedError)
    err = P.UnrealizedModelPlacementError("the plan")
    assert err.plan == "the plan" and str(err)
    # The engine's errors arrive as these classes (the translator in mixle._core).
    with pytest.raises(P.UnrealizedModelPlacementError, match="no executor") as raised:
        _core.parallel._raise_engine_error("unrealized_model_placement", "no executor")
    assert raised.value.plan is None
    with pytest.raises(P.EncodedDataControlConflictError, match="already encoded") as raised:
        _core.parallel._raise_engine_error("encoded_data_control_conflict", "already encoded")
    assert raised.value.args == ("already encoded",)


def test_names_not_provided_say_why():
    for name in ("encoded_data", "ComponentParallelEstimator", "model_parallel_fold", "RayTrainLauncher"):
        with pytest.raises(AttributeError, match="not provided"):
            getattr(P, name)
    assert not hasattr(P, "encoded_data")
    with pytest.raises(AttributeError, match="no attribute"):
        P.no_such_name  # noqa: B018


# ---- a user of the reference API --------------------------------------------------------------

REFERENCE_SCRIPT = """
import json
from mixle.utils.parallel import (
    BackendCapabilities, CollectiveKind, DistributedUpdate, ParallelAxis, ParallelPlan, ParameterLayout,
    PayloadKind, Resources, StateLayout, StepReceipt, UnrealizedModelPlacementError, attest_worker_coordinate,
    auto_parallel_estimator, get_training_backend, model_sharding_plan, plan, register_training_backend,
)

class FakeClient:
    def scheduler_info(self):
        return {"workers": {"tcp://w1:1": {"nthreads": 1, "memory_limit": 10**9},
                            "tcp://w2:1": {"nthreads": 3, "memory_limit": 10**9}}}

class FakeSparkContext:
    defaultParallelism = 4

class FakeComm:
    def Get_size(self):
        return 2

out = {}
resources = Resources.from_dask(FakeClient(), precision=None)
out["dask"] = [d.name for d in resources.devices]
placement = plan(data=DATA, model=MODEL, resources=resources, num_chunks=None, sub_chunks=2, sample_size=256,
                 safety_factor=1.25)
out["rows"] = [[s.device.name, s.start, s.stop, s.sub_chunks] for s in placement.shards]
out["same"] = Resources.from_json(resources.to_json()) == resources
out["spark"] = len(Resources.from_spark(FakeSparkContext(), memory_bytes=4000, precision=None).devices)
out["mpi"] = [d.memory_bytes for d in Resources.from_mpi(comm=FakeComm(), memory_bytes=1000, throughput=1.0).devices]
out["local"] = len(Resources.local(num_cpus=2, memory_bytes=None, precision=None).devices)
shards = model_sharding_plan(MODEL, Resources.local(num_cpus=4), estimator=None, axis="components",
                             min_components_per_shard=2)
out["shards"] = [[s.component_start, s.component_stop] for s in shards]
try:
    auto_parallel_estimator(None, MODEL, Resources.single_cpu(memory_bytes=64, throughput=1.0), n_data=10,
                            min_components_per_shard=1)
    out["unrealized"] = False
except UnrealizedModelPlacementError as error:
    out["unrealized"] = isinstance(error, RuntimeError)
mesh = ParallelPlan(dp_replicate=2, dp_shard=1, tp=2, pp=1, cp=1, ep=1, etp=1, microbatches=1,
                    gradient_accumulation_steps=1)
out["world"] = mesh.world_size
out["mesh"] = [list(mesh.mesh[0]), list(mesh.mesh[1])]
out["coordinate"] = attest_worker_coordinate(mesh, actual_world_size=4, rank=2).as_dict()["coordinate"]
try:
    attest_worker_coordinate(mesh, actual_world_size=8, rank=0)
    out["world_refused"] = False
except ValueError:
    out["world_refused"] = True
caps = BackendCapabilities(name="mine", axes=frozenset({ParallelAxis.DP_REPLICATE, ParallelAxis.TP}),
                           precisions=frozenset({"fp32"}), distributed_optimizer=False,
                           reshardable_checkpoint=False, elastic_restart=False, requirements=(),
                           incompatible_axis_sets=())
caps.validate(mesh, precision="fp32")

class MyBackend:
    capabilities = caps

register_training_backend("reference-user", MyBackend(), override=False)
try:
    register_training_backend("reference_user", MyBackend(), override=False)
    out["duplicate_refused"] = False
except ValueError:
    out["duplicate_refused"] = True
out["backend"] = get_training_backend("Reference-User").capabilities.name
update = DistributedUpdate(node_id="stats", payload=PayloadKind.SUFFICIENT_STATISTIC,
                           collective=CollectiveKind.ALL_REDUCE, mesh_axes=(ParallelAxis.DP_REPLICATE,),
                           state_layout=StateLayout.REPLICATED, exact=False, notes=(), contract_exact=True)
out["update"] = update.as_dict()["collective"]
layout = ParameterLayout(logical_id="means", global_shape=(4, 3), placements=(), shared_group=None,
                         optimizer_state=StateLayout.REPLICATED)
out["layout"] = list(layout.global_shape)
receipt = StepReceipt(step=0, loss=1.5, local_examples=10, local_tokens=10, microbatches=1, accumulation_steps=1,
                      data_parallel_size=2, optimizer="em", precision="fp64", collective_bytes=0, skipped=False,
                      extra={}, global_examples_observed=None, global_tokens_observed=None)
out["global_examples"] = receipt.global_examples
print(json.dumps(out))
"""


def test_a_script_written_against_the_reference_api(diag5, tmp_path):
    # The data and model are mixle's (the reference's are its own Python objects); everything else
    # is the reference API's names and keywords.
    setup = textwrap.dedent(f"""
        import numpy as np, mixle
        DATA = np.zeros((100, 3))
        MODEL = mixle.Model.from_json({diag5.to_json()!r})
    """)
    script = tmp_path / "reference_user.py"
    script.write_text(setup + REFERENCE_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["dask"] == ["dask:tcp://w1:1", "dask:tcp://w2:1"]
    assert out["rows"] == [["dask:tcp://w1:1", 0, 25, 2], ["dask:tcp://w2:1", 25, 100, 2]]
    assert out["same"] is True and out["spark"] == 4 and out["mpi"] == [500, 500] and out["local"] == 2
    assert out["shards"] == [[0, 3], [3, 5]]
    assert out["unrealized"] is True
    assert out["world"] == 4 and out["mesh"] == [["dp_replicate", "tp"], [2, 2]]
    assert out["coordinate"] == {"dp_replicate": 1, "dp_shard": 0, "tp": 0, "pp": 0, "cp": 0}
    assert out["world_refused"] is True and out["duplicate_refused"] is True and out["backend"] == "mine"
    assert out["update"] == "all_reduce" and out["layout"] == [4, 3] and out["global_examples"] == 20
