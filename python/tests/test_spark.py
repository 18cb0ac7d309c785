"""mixle.spark with a real local Spark (local[3]: three task slots, so three barrier tasks at once):
fits of Spark DataFrames equal one-process fits of the same rows from the same initial model; an
empty partition, vector and array columns, repartitioning, transform and save/load work; a rank's
Python worker killed mid-fit fails the fit with one error, in bounded time."""

import json
import os
import re
import sys

import numpy as np
import pytest

try:
    import pyspark  # noqa: F401
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import SparkSession
except ImportError:  # visible, and a failure under MIXLE_REQUIRE_TOOLS=1 (scripts/test-python)
    if os.environ.get("MIXLE_REQUIRE_TOOLS") == "1":
        raise
    pytest.skip("mixle.spark needs pyspark, pandas and pyarrow (python/requirements-test.txt)",
                allow_module_level=True)

import mixle  # noqa: E402
import mixle.spark  # noqa: E402

RTOL = 1e-9  # the statistics are summed per rank, then across ranks: rounding only


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark's Python workers start in this directory: keep its source tree (no _core) off their path,
    # so that they import the installed package, as the tests do.
    os.environ["PYTHONSAFEPATH"] = "1"
    session = (
        SparkSession.builder.master("local[3]")
        .appName("mixle-test-spark")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "3")
        .config("spark.default.parallelism", "3")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def frame(spark, rows, sizes):
    """A DataFrame (id long, features array<double>) with one partition per entry of sizes, holding
    that many consecutive rows (0: an empty partition)."""
    ends = np.cumsum(sizes)
    slices = [[(int(i), rows[i].tolist()) for i in range(end - size, end)] for size, end in zip(sizes, ends)]
    rdd = spark.sparkContext.parallelize(range(len(sizes)), len(sizes)).flatMap(lambda p: slices[p])
    return spark.createDataFrame(rdd, "id long, features array<double>")


def spark_params(init):
    return dict(initMode="given", initialWeights=init["weights_init"], initialMeans=init["means_init"],
                initialPrecisions=init["precisions_init"])


def assert_same(model, local):
    assert model.numIter == local.n_iter_
    np.testing.assert_allclose(model.weights, local.weights_, rtol=RTOL)
    np.testing.assert_allclose(model.means, local.means_, rtol=RTOL)
    np.testing.assert_allclose(model.covariances, local.covariances_, rtol=RTOL)
    np.testing.assert_allclose(model.lowerBound, local.lower_bound_, rtol=RTOL)


def predictions(model, df):
    """(labels, responsibilities) of transform(df), in id order."""
    out = model.transform(df).orderBy("id").select("prediction", "probability").collect()
    return np.array([r[0] for r in out]), np.array([r[1].toArray() for r in out])


def test_a_dataframe_fit_equals_the_one_process_fit(spark, rows, given_start):
    df = frame(spark, rows, [3000, 3000, 3000])
    init = given_start(rows)
    model = mixle.spark.GaussianMixture(k=3, covarianceType="full", tol=1e-6, maxIter=300,
                                        **spark_params(init)).fit(df)
    local = mixle.GaussianMixture(3, covariance_type="full", tol=1e-6, max_iter=300, **init).fit(rows)
    assert_same(model, local)
    assert model.converged and model.rowsPerRank == [3000, 3000, 3000]
    assert model.getK() == 3 and model.getFeaturesCol() == "features"
    labels, resp = predictions(model, df)
    np.testing.assert_array_equal(labels, local.predict(rows))
    np.testing.assert_allclose(resp, local.predict_proba(rows), atol=1e-12)
    assert json.loads(model.to_json())["parts"][0]["family"] == "gaussian_full"
    np.testing.assert_allclose(mixle.Model.from_json(model.to_json()).weights, local.weights_, rtol=RTOL)


def test_weight_col_weighs_each_row(spark, rows, given_start):
    from pyspark.sql import functions as F

    # Sample weights 0 … 3 from an integer column (an empty partition among the ranks): the
    # one-process weighted fit; a null weight is refused naming its row.
    weights = (np.arange(len(rows)) * 5 + 1) % 4
    df = frame(spark, rows, [4000, 0, 5000]).withColumn("w", (F.col("id") * 5 + 1) % 4)
    init = given_start(rows, "diag")
    model = mixle.spark.GaussianMixture(k=3, covarianceType="diag", tol=1e-8, maxIter=200, weightCol="w",
                                        **spark_params(init)).fit(df)
    local = mixle.GaussianMixture(3, covariance_type="diag", tol=1e-8, max_iter=200, **init)
    assert_same(model, local.fit(rows, sample_weight=weights.astype(float)))
    assert model.getWeightCol() == "w"
    nulls = df.withColumn("w", F.when(F.col("id") == 4006, None).otherwise(F.col("w")))
    with pytest.raises(ValueError, match=r"rank 2: weightCol: row 6 \(counted from 0\) of this partition has weight nan"):
        mixle.spark.GaussianMixture(k=3, weightCol="w").fit(nulls)
    with pytest.raises(ValueError, match="weightCol = 'nope': no such column"):
        mixle.spark.GaussianMixture(k=3, weightCol="nope").fit(df)


def test_tied_covariance(spark, rows, given_start):
    init = given_start(rows, "tied")
    model = mixle.spark.GaussianMixture(k=3, covarianceType="tied", tol=1e-8, maxIter=200,
                                        **spark_params(init)).fit(frame(spark, rows, [4500, 4500]))
    local = mixle.GaussianMixture(3, covariance_type="tied", tol=1e-8, max_iter=200, **init).fit(rows)
    assert_same(model, local)
    assert model.covariances.shape == (3, 3)


def test_an_empty_partition_and_a_vector_column(spark, rows, given_start):
    df = frame(spark, rows, [4500, 0, 4500]).withColumn("v", array_to_vector("features"))
    init = given_start(rows, "diag")
    model = mixle.spark.GaussianMixture(k=3, covarianceType="diag", featuresCol="v", tol=1e-8, maxIter=200,
                                        **spark_params(init)).fit(df)
    assert model.rowsPerRank == [4500, 0, 4500]
    local = mixle.GaussianMixture(3, covariance_type="diag", tol=1e-8, max_iter=200, **init).fit(rows)
    assert_same(model, local)
    labels, _ = predictions(model, df)
    np.testing.assert_array_equal(labels, local.predict(rows))


def test_repartitioned_to_num_workers_with_native_initialisation(spark, rows):
    df = frame(spark, rows, [9000])
    gm = mixle.spark.GaussianMixture(k=3, covarianceType="spherical", numWorkers=2, seed=7)
    model = gm.fit(df)
    assert len(model.rowsPerRank) == 2 and sum(model.rowsPerRank) == 9000
    assert model.converged
    np.testing.assert_allclose(np.sort(model.means[:, 0]), [0, 1, 4], atol=0.1)
    assert model.covariances.shape == (3,)


def test_save_and_load(spark, rows, tmp_path, given_start):
    df = frame(spark, rows, [3000, 3000, 3000])
    init = given_start(rows)
    gm = mixle.spark.GaussianMixture(k=3, tol=1e-6, predictionCol="label", probabilityCol="resp",
                                     **spark_params(init))
    model = gm.fit(df)
    model.write().overwrite().save(str(tmp_path / "model"))
    loaded = mixle.spark.GaussianMixtureModel.load(str(tmp_path / "model"))
    assert loaded.uid == model.uid and loaded.getPredictionCol() == "label" and loaded.numIter == model.numIter
    assert loaded.to_json() == model.to_json()
    a = model.transform(df).orderBy("id").select("label", "resp").collect()
    b = loaded.transform(df).orderBy("id").select("label", "resp").collect()
    assert a == b
    gm.write().overwrite().save(str(tmp_path / "estimator"))
    again = mixle.spark.GaussianMixture.load(str(tmp_path / "estimator"))
    np.testing.assert_array_equal(again.getOrDefault("initialMeans"), init["means_init"])


def test_clear_errors(spark, rows):
    df = frame(spark, rows[:30], [10, 10, 10]).withColumn("text", pyspark.sql.functions.lit("a"))
    with pytest.raises(TypeError, match=r"featuresCol = 'text' has type string: a vector column"):
        mixle.spark.GaussianMixture(featuresCol="text").fit(df)
    with pytest.raises(ValueError, match="featuresCol = 'nope': no such column"):
        mixle.spark.GaussianMixture(featuresCol="nope").fit(df)
    with pytest.raises(ValueError, match="initMode = 'given' needs"):
        mixle.spark.GaussianMixture(initMode="given").fit(df)
    with pytest.raises(ValueError, match="covarianceType = 'banana'"):
        mixle.spark.GaussianMixture(covarianceType="banana").fit(df)
    # An error on the executors (40 components for 30 rows) stops every rank and reaches the driver.
    with pytest.raises(ValueError, match="30 rows for k = 40 components"):
        mixle.spark.GaussianMixture(k=40).fit(df)
    # A union is refused by Spark's barrier mode unless repartitioned: the error says what to set.
    union = frame(spark, rows[:60], [60]).union(frame(spark, rows[60:120], [30, 30]))
    with pytest.raises(RuntimeError, match="set numWorkers"):
        mixle.spark.GaussianMixture(k=2).fit(union)
    assert sum(mixle.spark.GaussianMixture(k=2, numWorkers=3).fit(union).rowsPerRank) == 120
    # A row the engine refuses on one rank: every rank stops, and the driver names row and value.
    bad = rows[:300].copy()
    bad[250, 1] = np.nan
    with pytest.raises(ValueError, match="value nan is not valid"):
        mixle.spark.GaussianMixture(k=2, timeout=20).fit(frame(spark, bad, [100, 100, 100]))


def _ranks_in_the_world():
    """{pid: TCP connections} of Spark's Python workers (forked by a pyspark.daemon under this
    session's JVM) that hold three or more: a worker holds one, to the JVM; a rank in the Gloo world
    also holds the store's and its peers' (rank 0 the most: it serves the store)."""
    import psutil  # requirements-test.txt

    ranks = {}
    for p in psutil.Process().children(recursive=True):
        try:
            if "pyspark.daemon" not in " ".join(p.parent().cmdline()):
                continue
            count = len(p.net_connections(kind="tcp") if hasattr(p, "net_connections") else p.connections(kind="tcp"))
        except psutil.Error:  # it ended meanwhile
            continue
        if count >= 3:
            ranks[p.pid] = count
    return ranks


def test_a_python_worker_killed_mid_fit_fails_the_fit_in_bounded_time(spark, rows):
    # A rank's Python worker dies in EM (SIGKILL): Spark fails the barrier stage (a result stage,
    # which it does not retry; local mode retries no task), and the driver raises one error naming
    # the rank, within the fit's timeout plus a bound. tol = 0: EM runs until the kill.
    import signal
    import threading
    import time

    df = frame(spark, rows, [3000, 3000, 3000])
    timeout = 10
    gm = mixle.spark.GaussianMixture(k=3, maxIter=10**6, tol=0.0, seed=0, timeout=timeout)
    errors = []

    def fit():
        try:
            gm.fit(df)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            errors.append(e)

    t = threading.Thread(target=fit)
    t.start()
    # Wait until the three ranks are in the Gloo world, then kill one that is not rank 0.
    ranks, deadline = {}, time.monotonic() + 60
    while len(ranks) < 3 and time.monotonic() < deadline:
        ranks = _ranks_in_the_world()
        time.sleep(0.05)
    assert len(ranks) == 3, f"the fit's ranks never connected: {ranks}"
    time.sleep(1.0)  # well inside EM
    # Counted again now that every connection is up: rank 0 also holds the store's (its listener
    # and one per rank), so it has the most. A count taken while the world was still forming
    # could rank it lowest, and the test then killed rank 0.
    ranks = _ranks_in_the_world()
    assert len(ranks) == 3 and min(ranks.values()) < max(ranks.values()), f"rank 0 cannot be told apart: {ranks}"
    assert t.is_alive(), "the fit ended before the kill"
    killed_at = time.monotonic()
    os.kill(min(ranks, key=ranks.get), signal.SIGKILL)
    t.join(timeout=120)
    assert not t.is_alive(), "the fit hung after a rank's worker was killed"
    assert time.monotonic() - killed_at < timeout + 30, "failed within the timeout plus a bound"
    assert len(errors) == 1, "one exception reaches the driver"
    assert isinstance(errors[0], RuntimeError), repr(errors[0])
    assert re.search(r"rank [12]'s task failed", str(errors[0])), errors[0]
    assert "Python worker exited unexpectedly" in str(errors[0]), errors[0]
    # No rank is left in the world (Spark killed them, or they saw the lost peer and returned),
    # and the session fits again.
    while _ranks_in_the_world() and time.monotonic() - killed_at < timeout + 30:
        time.sleep(0.1)
    assert not _ranks_in_the_world(), "a surviving rank still holds the Gloo world"
    again = mixle.spark.GaussianMixture(k=2).fit(frame(spark, rows[:300], [100, 100, 100]))
    assert again.rowsPerRank == [100, 100, 100]
