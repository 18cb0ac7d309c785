"""bench/gpu-model's reading of sources and SASS, on synthetic inputs (no nvcc, nvdisasm or GPU).

The model's numbers are only as good as its finding the right loop and counting it, so these
pin: a marker's loop extent (braced and unbraced), backward branches as loops with nested
loops' instructions left out, the marker's loop picked by the lines its instructions come from
(an inlined callee's file ignored), elements per pass from the operation count (an HMMA's
flops from its shape), Itanium names, and the slot arithmetic and shared-memory layouts mirrored
from the kernels.
"""
import importlib.machinery
import importlib.util
import re
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
loader = importlib.machinery.SourceFileLoader("gpu_model", str(ROOT / "bench" / "gpu-model"))
spec = importlib.util.spec_from_loader("gpu_model", loader)
gm = importlib.util.module_from_spec(spec)
sys.modules["gpu_model"] = gm  # dataclasses look the module up while the class is built
loader.exec_module(gm)

SOURCE = """\
void f() {
  // gpu-model: outer fp=1 per (row)
  for (int i = 0; i < n; ++i) {
    a += b;
    // gpu-model: inner fp=2 per (row, dim)
    for (int j = 0; j < m; ++j)
      c = fma(c, d, e(j));
  }
}
"""


def sass(file: str) -> str:
    """A function whose outer loop (lines 3-8) holds an inner loop (line 7) unrolled twice."""
    lines = [
        ".text._ZN5mixle3fooE:",
        f'\t//## File "{file}", line 2',
        "        /*0000*/                   MOV R1, c[0x0][0x28] ;",
        ".L_x_0:",
        f'\t//## File "{file}", line 4',
        "        /*0010*/                   FADD R2, R2, R3 ;",
        ".L_x_1:",
        f'\t//## File "{file}", line 7',
        "        /*0020*/                   FFMA R4, R4, R5, R6 ;",
        "        /*0030*/                   FMUL R7, R4, R5 ;",
        '\t//## File "/elsewhere/math.hpp", line 40',
        "        /*0040*/                   FFMA R8, R4, R5, R6 ;",
        "        /*0050*/                   MUFU.EX2 R9, R8 ;",
        f'\t//## File "{file}", line 6',
        "        /*0060*/              @P0 BRA `(.L_x_1) ;",
        f'\t//## File "{file}", line 3',
        "        /*0070*/                   IADD3 R0, R0, 0x1, RZ ;",
        "        /*0080*/              @P1 BRA `(.L_x_0) ;",
        "        /*0090*/                   EXIT ;",
        "        /*00a0*/                   NOP ;",
    ]
    return "\n".join(lines) + "\n"


class GpuModelTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.src = Path(self.tmp.name) / "k.cu"
        self.src.write_text(SOURCE)

    def tearDown(self):
        self.tmp.cleanup()

    def test_marker_extents(self):
        markers = gm.read_markers([self.src])
        self.assertEqual(list(markers["outer"].lines), [3, 4, 5, 6, 7, 8])
        self.assertEqual(list(markers["inner"].lines), [6, 7])  # unbraced: up to the `;`
        self.assertEqual((markers["inner"].cls, markers["inner"].per_element), ("fp", 2.0))
        self.assertEqual(markers["inner"].what, "(row, dim)")

    def test_loops_are_backward_branches_without_their_nested_loops(self):
        fn = gm.parse_sass(sass(str(self.src)))["_ZN5mixle3fooE"]
        bodies = sorted(([i.addr for i in b] for b in gm.loop_bodies(fn)), key=len)
        self.assertEqual(bodies[0], [0x10, 0x70, 0x80])  # the outer loop, less the inner one
        self.assertEqual(bodies[1], [0x20, 0x30, 0x40, 0x50, 0x60])

    def test_the_marked_loop_is_read_from_its_own_lines(self):
        fn = gm.parse_sass(sass(str(self.src)))["_ZN5mixle3fooE"]
        markers = gm.read_markers([self.src])
        inner = gm.read_loop(fn, markers["inner"], markers)
        # 3 fp operations (FFMA, FMUL and the inlined callee's FFMA) at 2 per element: 1.5 elements
        # per pass, 5 instructions per pass.
        self.assertEqual(inner.instructions_per_pass, 5)
        self.assertAlmostEqual(inner.elements_per_pass, 1.5)
        self.assertAlmostEqual(inner.instr_per_element, 5 / 1.5)
        self.assertAlmostEqual(inner.mufu_per_element, 1 / 1.5)
        # The inner loop's lines lie inside the outer marker's statement, and it has more fp
        # operations; the outer marker still reads the outer loop's own body.
        outer = gm.read_loop(fn, markers["outer"], markers)
        self.assertEqual((outer.instructions_per_pass, outer.elements_per_pass), (3, 1.0))

    def test_a_marker_without_its_loop_is_an_error(self):
        fn = gm.parse_sass(sass("/some/other.cu"))["_ZN5mixle3fooE"]
        with self.assertRaises(SystemExit):
            gm.read_loop(fn, gm.read_markers([self.src])["inner"], {})

    def test_mma_loops_count_flops_from_the_hmma_shapes(self):
        self.assertEqual(gm.op_weight("mma", "HMMA.1684.F32.TF32"), 1024.0)  # m16n8k4
        self.assertEqual(gm.op_weight("mma", "HMMA.1688.F32.TF32"), 2048.0)  # m16n8k8
        self.assertEqual(gm.op_weight("mma", "HMMA.16816.F32"), 4096.0)      # m16n8k16
        self.assertEqual(gm.op_weight("fp", "FFMA"), 1.0)
        marker = gm.MARKER.search("    // gpu-model: tile mma=8192 per (16 rows, 16 components, 8 dims)")
        self.assertEqual((marker["cls"], marker["n"]), ("mma", "8192"))

    def test_kernel_names(self):
        mangled = ("_ZN5mixle7kernels4cuda51_GLOBAL__N__5915b362_12_normalise_cu_75bcf389_1193311"
                   "init_kernelIfEEvPKT_S6_PS4_il")
        self.assertEqual(gm.kernel_name(mangled), "init_kernel")
        self.assertEqual(gm.kernel_name("_ZN5mixle7kernels4cuda19reduce_slots_kernelEPKdllPd"),
                         "reduce_slots_kernel")

    def test_slot_rows_mirror_the_chunk_plan(self):
        header = (ROOT / "kernels" / "cuda" / "chunk_plan.hpp").read_text()
        self.assertIn("constexpr int kSubBlockRows = %d;" % gm.SUB_BLOCK_ROWS, header)
        self.assertIn("kMaxChunkRows = std::int64_t{1} << %d;" % (gm.MAX_CHUNK_ROWS.bit_length() - 1), header)
        self.assertRegex(header, r"kPartialBudgetBytes = std::size_t\(%d\) << 20;" % (gm.PARTIAL_BUDGET >> 20))
        self.assertEqual(gm.slot_rows(2 + 64 + 2 * 64 * 32), 256)  # 272 MB of partials a chunk: 2 sub-blocks
        self.assertEqual(gm.slot_rows(8), 128)

    def test_shared_layouts_mirror_the_kernels(self):
        fused = (ROOT / "kernels" / "cuda" / "gaussian_diag_fused.cu").read_text()
        self.assertIn("xs_stride(tensor_ ? (D_ + 7) / 8 * 8 + 4 : (D_ + 3) / 4 * 4 + 4)", fused)
        self.assertIn("kp(tensor_ ? (K_ + 15) / 16 * 16 : (K_ + 3) / 4 * 4)", fused)
        self.assertIn("dp(tensor_ ? (D_ + 7) / 8 * 8 : (D_ + 3) / 4 * 4)", fused)
        self.assertIn("int expanded() const { return centre() + (tensor ? dp : 0); }", fused)
        self.assertIn("int xs() const { return expanded() + (tensor ? kp : 0); }", fused)
        self.assertIn("int y2s() const { return ys() + (tensor ? tile_rows * xs_stride : 0); }", fused)
        self.assertIn("int ls() const { return y2s() + (tensor ? tile_rows * xs_stride : 0); }", fused)
        self.assertIn("row_status() + tile_rows", fused)  # the rows' log-likelihoods and statuses end it
        self.assertIn("int coef_stride() const { return 8 * dp + 4; }", fused)
        self.assertIn("return tensor ? 2 * dp * kp : kp / 4 * coef_stride();", fused)
        self.assertEqual(gm.fused_shared_bytes(64, 32), (16 * (8 * 32 + 4) + 64 + 32 * 36 + 32 * 64 + 3 * 32) * 4)
        # tensor: weights, log_const, centre, guard verdicts, x, y and y² tiles, L tile, row results
        # and non-finite flags
        self.assertIn("return static_cast<std::size_t>(nonfinite() + (tensor ? tile_rows : 0)) * sizeof(float);", fused)
        self.assertEqual(gm.fused_shared_bytes(64, 32, tensor=True),
                         (2 * 32 * 64 + 64 + 32 + 64 + 3 * 32 * 36 + 32 * 64 + 4 * 32) * 4)
        self.assertEqual(gm.fused_shared_bytes(5, 62, tensor=True),
                         (2 * 64 * 16 + 16 + 64 + 16 + 3 * 32 * 68 + 32 * 16 + 4 * 32) * 4)
        self.assertLessEqual(gm.fused_shared_bytes(256, 8), 48 * 1024)  # 16-row tiles
        self.assertLessEqual(gm.fused_shared_bytes(256, 8, tensor=True), 48 * 1024)
        full = (ROOT / "kernels" / "cuda" / "gaussian_full.cu").read_text()
        self.assertTrue(re.search(r"for \(int rows : \{128, 64, 32\}\)", full))
        self.assertIn("kFullGroup * kFullGroup * g * (g + 1) / 2", full)  # P staged by output group
        self.assertEqual(gm.staged_bytes(64, 128), (256 * 10 + 64 * 129) * 4)
        self.assertEqual(gm.staged_rows(64), 128)
        self.assertEqual(gm.staged_rows(112), 32)
        self.assertIn("s.per_comp += s.nj - a / 2", full)
        self.assertEqual(gm.packed_moment_shape(64, 256)["comps"], 3)    # 72 blocks a component
        self.assertEqual(gm.packed_moment_shape(64, 256)["threads"], 224)
        self.assertEqual(gm.packed_moment_shape(16, 16)["threads"], 96)  # 6 blocks, 16 components
        self.assertEqual(gm.packed_moment_shape(33, 7)["dp"], 64)        # a power of 2


if __name__ == "__main__":
    unittest.main()
