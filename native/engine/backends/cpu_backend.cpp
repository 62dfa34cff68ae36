// CPU reference kernels: strided loops computing in double, so float64 tensors give
// exact finite-difference gradient checks. Correctness over speed.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <cstring>
#include <limits>
#include <random>

#include "engine/backends/backend.h"
#include "engine/backends/philox.h"
#include "engine/backends/scalar_math.h"

namespace vramlab::engine {

namespace {

double load(const uint8_t* p, DType t) {
  switch (t) {
    case DType::Float32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::Float64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::Float16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    case DType::BFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_float(v);
    }
    case DType::Int64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
  }
  return 0;
}

void store(uint8_t* p, DType t, double x) {
  switch (t) {
    case DType::Float32: {
      float v = float(x);
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::Float64:
      std::memcpy(p, &x, 8);
      break;
    case DType::Float16: {
      uint16_t v = float_to_half(float(x));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::BFloat16: {
      uint16_t v = float_to_bf16(float(x));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::Int64: {
      int64_t v = int64_t(x);
      std::memcpy(p, &v, 8);
      break;
    }
  }
}

struct View {
  uint8_t* base;
  DType dtype;
  size_t item;
  const Shape* strides;
  explicit View(const Tensor& t)
      : base(static_cast<uint8_t*>(t.data_ptr())), dtype(t.dtype()), item(itemsize(t.dtype())), strides(&t.strides()) {
    if (!base && t.numel() > 0) throw std::logic_error("cpu kernel on a tensor without data");
  }
  View(uint8_t* b, DType d, size_t i, const Shape* st) : base(b), dtype(d), item(i), strides(st) {}
  double get(int64_t off) const { return load(base + off * int64_t(item), dtype); }
  void set(int64_t off, double v) const { store(base + off * int64_t(item), dtype, v); }
};

// Visits every index of `sizes`, passing each tensor's element offset.
template <size_t N, class F>
void for_each_index(const Shape& sizes, const View* const (&views)[N], F&& f) {
  int64_t total = shape_numel(sizes);
  if (total == 0) return;
  size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  std::array<int64_t, N> off{};
  for (int64_t n = 0; n < total; ++n) {
    f(off);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < sizes[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += (*views[k]->strides)[d];
        break;
      }
      for (size_t k = 0; k < N; ++k) off[k] -= (*views[k]->strides)[d] * (sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

int64_t at2(const Tensor& t, int64_t r, int64_t c) { return r * t.strides()[0] + c * t.strides()[1]; }
int64_t at4(const Tensor& t, int64_t b, int64_t h, int64_t i, int64_t d) {
  return b * t.strides()[0] + h * t.strides()[1] + i * t.strides()[2] + d * t.strides()[3];
}

class CpuBackend : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  bool has_data() const override { return true; }
  bool models_cuda() const override { return false; }

  void attach_data(Storage& s) override {
    s.host.reset(new uint8_t[std::max<size_t>(s.nbytes, 1)]());
    s.data = s.host.get();
  }

  void fill(const Tensor& out, double v) override {
    View o(out);
    for_each_index(out.sizes(), {&o}, [&](auto off) { o.set(off[0], v); });
  }

  void random_normal(const Tensor& out, double mean, double std, uint64_t seed) override {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> dist(mean, std);
    View o(out);
    for_each_index(out.sizes(), {&o}, [&](auto off) { o.set(off[0], dist(rng)); });
  }

  void random_uniform(const Tensor& out, double lo, double hi, uint64_t seed) override {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    View o(out);
    for_each_index(out.sizes(), {&o}, [&](auto off) { o.set(off[0], dist(rng)); });
  }

  void unary(UnaryOp op, const Tensor& out, const Tensor& a, double s) override {
    View o(out), x(a);
    for_each_index(out.sizes(), {&o, &x}, [&](auto off) { o.set(off[0], apply_unary(op, x.get(off[1]), s)); });
  }

  void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double s) override {
    View o(out), x(a), y(b);
    for_each_index(out.sizes(), {&o, &x, &y},
                   [&](auto off) { o.set(off[0], apply_binary(op, x.get(off[1]), y.get(off[2]), s)); });
  }

  void ternary(TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, double s) override {
    View o(out), x(a), y(b), z(c);
    for_each_index(out.sizes(), {&o, &x, &y, &z},
                   [&](auto off) { o.set(off[0], apply_ternary(op, x.get(off[1]), y.get(off[2]), z.get(off[3]), s)); });
  }

  void sum_reduce(const Tensor& out, const Tensor& in) override {
    View o(out), x(in);
    // Accumulate through `out` viewed with stride 0 on reduced dims.
    Shape st = out.strides();
    for (size_t d = 0; d < st.size(); ++d)
      if (out.sizes()[d] == 1 && in.sizes()[d] != 1) st[d] = 0;
    std::vector<double> acc(size_t(out.numel()), 0.0);
    Shape cst = contiguous_strides(out.sizes());
    for (size_t d = 0; d < cst.size(); ++d)
      if (st[d] == 0) cst[d] = 0;
    View a{nullptr, DType::Float64, 8, &cst};
    for_each_index(in.sizes(), {&a, &x}, [&](auto off) { acc[size_t(off[0])] += x.get(off[1]); });
    Shape ocst = contiguous_strides(out.sizes());
    View idx{nullptr, DType::Float64, 8, &ocst};
    for_each_index(out.sizes(), {&o, &idx}, [&](auto off) { o.set(off[0], acc[size_t(off[1])]); });
  }

  void gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias, bool) override {
    View o(out), x(a), y(b);
    int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    const auto &as = a.strides(), &bs = b.strides(), &os = out.strides();
    std::unique_ptr<View> bv;
    if (bias) bv = std::make_unique<View>(*bias);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += x.get(m * as[0] + k * as[1]) * y.get(k * bs[0] + n * bs[1]);
        if (bv) acc += bv->get(m * bias->strides()[0] + n * bias->strides()[1]);
        o.set(m * os[0] + n * os[1], acc);
      }
  }

  void log_softmax(const Tensor& out, const Tensor& in) override {
    View o(out), x(in);
    int64_t R = in.size(0), C = in.size(1);
    for (int64_t r = 0; r < R; ++r) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < C; ++c) mx = std::max(mx, x.get(r * in.strides()[0] + c * in.strides()[1]));
      double s = 0;
      for (int64_t c = 0; c < C; ++c) s += std::exp(x.get(r * in.strides()[0] + c * in.strides()[1]) - mx);
      double lse = mx + std::log(s);
      for (int64_t c = 0; c < C; ++c)
        o.set(r * out.strides()[0] + c * out.strides()[1], x.get(r * in.strides()[0] + c * in.strides()[1]) - lse);
    }
  }

  void log_softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& result) override {
    View o(out), g(grad), y(result);
    int64_t R = result.size(0), C = result.size(1);
    for (int64_t r = 0; r < R; ++r) {
      double gs = 0;
      for (int64_t c = 0; c < C; ++c) gs += g.get(r * grad.strides()[0] + c * grad.strides()[1]);
      for (int64_t c = 0; c < C; ++c) {
        double gv = g.get(r * grad.strides()[0] + c * grad.strides()[1]);
        double yv = y.get(r * result.strides()[0] + c * result.strides()[1]);
        o.set(r * out.strides()[0] + c * out.strides()[1], gv - std::exp(yv) * gs);
      }
    }
  }

  void nll_loss(const Tensor& out, const Tensor& total_weight, const Tensor& logp, const Tensor& target,
                bool mean) override {
    View o(out), tw(total_weight), x(logp), t(target);
    double s = 0, w = 0;
    for (int64_t i = 0; i < logp.size(0); ++i) {
      int64_t cls = int64_t(t.get(i * target.strides()[0]));
      if (cls == -100) continue;  // ignore_index
      if (cls < 0 || cls >= logp.size(1))
        throw std::out_of_range("Target " + std::to_string(cls) + " is out of bounds.");
      s -= x.get(i * logp.strides()[0] + cls * logp.strides()[1]);
      w += 1;
    }
    o.set(0, mean ? s / w : s);
    tw.set(0, w);
  }

  void nll_loss_backward(const Tensor& gi, const Tensor& grad, const Tensor& target, const Tensor& total_weight,
                         bool mean) override {
    View o(gi), g(grad), t(target), tw(total_weight);
    double scale = -g.get(0) / (mean ? tw.get(0) : 1.0);
    for (int64_t i = 0; i < gi.size(0); ++i) {
      int64_t cls = int64_t(t.get(i * target.strides()[0]));
      if (cls == -100) continue;
      o.set(i * gi.strides()[0] + cls * gi.strides()[1], scale);
    }
  }

  // ---- transformer kernels (reference: plain loops in double) ----
  void index_select_rows(const Tensor& out, const Tensor& weight, const Tensor& indices) override {
    View o(out), w(weight), ix(indices);
    const int64_t n = indices.numel(), c = weight.size(1);
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = int64_t(ix.get(i * (indices.dim() ? indices.strides().back() : 0)));
      if (r < 0 || r >= weight.size(0))
        throw std::out_of_range("index " + std::to_string(r) + " is out of bounds for dimension 0 with size " +
                                std::to_string(weight.size(0)));
      for (int64_t j = 0; j < c; ++j)
        o.set(i * out.strides()[0] + j * out.strides()[1], w.get(r * weight.strides()[0] + j * weight.strides()[1]));
    }
  }

  void index_add_rows(const Tensor& gw, const Tensor& grad, const Tensor& indices) override {
    View o(gw), g(grad), ix(indices);
    const int64_t n = indices.numel(), c = gw.size(1);
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = int64_t(ix.get(i * (indices.dim() ? indices.strides().back() : 0)));
      for (int64_t j = 0; j < c; ++j) {
        int64_t off = r * gw.strides()[0] + j * gw.strides()[1];
        o.set(off, o.get(off) + g.get(i * grad.strides()[0] + j * grad.strides()[1]));
      }
    }
  }

  void layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor* weight,
                  const Tensor* bias, double eps) override {
    View yo(y), mo(mean), ro(rstd), xv(x);
    const int64_t n = x.size(-1), m = x.numel() / std::max<int64_t>(n, 1);
    std::unique_ptr<View> wv, bv;
    if (weight) wv = std::make_unique<View>(*weight);
    if (bias) bv = std::make_unique<View>(*bias);
    for (int64_t r = 0; r < m; ++r) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < n; ++j) mu += xv.get(r * n + j);
      mu /= double(n);
      for (int64_t j = 0; j < n; ++j) var += (xv.get(r * n + j) - mu) * (xv.get(r * n + j) - mu);
      double rs = 1.0 / std::sqrt(var / double(n) + eps);
      mo.set(r, mu);
      ro.set(r, rs);
      for (int64_t j = 0; j < n; ++j) {
        double v = (xv.get(r * n + j) - mu) * rs;
        if (wv) v *= wv->get(j);
        if (bv) v += bv->get(j);
        yo.set(r * n + j, v);
      }
    }
  }

  void layer_norm_backward(const Tensor* dx, const Tensor* dweight, const Tensor* dbias, const Tensor& dy,
                           const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* weight) override {
    View g(dy), xv(x), mv(mean), rv(rstd);
    const int64_t n = x.size(-1), m = x.numel() / std::max<int64_t>(n, 1);
    std::vector<double> dw(size_t(n), 0.0), db(size_t(n), 0.0);
    std::unique_ptr<View> wv, dxv;
    if (weight) wv = std::make_unique<View>(*weight);
    if (dx) dxv = std::make_unique<View>(*dx);
    for (int64_t r = 0; r < m; ++r) {
      double mu = mv.get(r), rs = rv.get(r), s1 = 0, s2 = 0;
      for (int64_t j = 0; j < n; ++j) {
        double xhat = (xv.get(r * n + j) - mu) * rs, gy = g.get(r * n + j);
        dw[size_t(j)] += gy * xhat;
        db[size_t(j)] += gy;
        double gw = gy * (wv ? wv->get(j) : 1.0);
        s1 += gw;
        s2 += gw * xhat;
      }
      if (!dxv) continue;
      for (int64_t j = 0; j < n; ++j) {
        double xhat = (xv.get(r * n + j) - mu) * rs;
        double gw = g.get(r * n + j) * (wv ? wv->get(j) : 1.0);
        dxv->set(r * n + j, rs * (gw - s1 / double(n) - xhat * s2 / double(n)));
      }
    }
    if (dweight) {
      View o(*dweight);
      for (int64_t j = 0; j < n; ++j) o.set(j, dw[size_t(j)]);
    }
    if (dbias) {
      View o(*dbias);
      for (int64_t j = 0; j < n; ++j) o.set(j, db[size_t(j)]);
    }
  }

  void attention(const Tensor& out, const Tensor* lse, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                 double scale) override {
    View o(out), qv(q), kv(k), vv(v);
    std::unique_ptr<View> lv;
    if (lse) lv = std::make_unique<View>(*lse);
    const int64_t B = q.size(0), H = q.size(1), Sq = q.size(2), D = q.size(3), Sk = k.size(2), Dv = v.size(3);
    auto at = [](const Tensor& t, int64_t b, int64_t h, int64_t i, int64_t d) {
      return b * t.strides()[0] + h * t.strides()[1] + i * t.strides()[2] + d * t.strides()[3];
    };
    std::vector<double> p(static_cast<size_t>(Sk));
    const int64_t G = H / k.size(1);  // grouped-query: q head h reads kv head h / G
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Sq; ++i) {
          const int64_t hk = h / G;
          double mx = -std::numeric_limits<double>::infinity();
          int64_t last = causal ? std::min(i, Sk - 1) : Sk - 1;  // causal: top-left aligned (j <= i)
          for (int64_t j = 0; j <= last; ++j) {
            double s = 0;
            for (int64_t d = 0; d < D; ++d) s += qv.get(at(q, b, h, i, d)) * kv.get(at(k, b, hk, j, d));
            p[size_t(j)] = s * scale;
            mx = std::max(mx, p[size_t(j)]);
          }
          double sum = 0;
          for (int64_t j = 0; j <= last; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
          if (lv) lv->set(b * lse->strides()[0] + h * lse->strides()[1] + i * lse->strides()[2], mx + std::log(sum));
          for (int64_t d = 0; d < Dv; ++d) {
            double acc = 0;
            for (int64_t j = 0; j <= last; ++j) acc += p[size_t(j)] * vv.get(at(v, b, hk, j, d));
            o.set(at(out, b, h, i, d), acc / sum);
          }
        }
  }

  void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                          const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, bool causal,
                          double scale, const AttentionScratch&) override {
    View gq(dq), gk(dk), gv(dv), go(dout), qv(q), kv(k), vv(v), ov(out), lv(lse);
    const int64_t B = q.size(0), H = q.size(1), Sq = q.size(2), D = q.size(3), Sk = k.size(2), Dv = v.size(3);
    auto at = [](const Tensor& t, int64_t b, int64_t h, int64_t i, int64_t d) {
      return b * t.strides()[0] + h * t.strides()[1] + i * t.strides()[2] + d * t.strides()[3];
    };
    for (const Tensor* t : {&dq, &dk, &dv}) fill(*t, 0.0);
    const int64_t G = H / k.size(1);  // grouped-query: dK, dV summed over the G query heads of a kv head
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Sq; ++i) {
          const int64_t hk = h / G;
          int64_t last = causal ? std::min(i, Sk - 1) : Sk - 1;
          double l = lv.get(b * lse.strides()[0] + h * lse.strides()[1] + i * lse.strides()[2]);
          double delta = 0;
          for (int64_t d = 0; d < Dv; ++d) delta += go.get(at(dout, b, h, i, d)) * ov.get(at(out, b, h, i, d));
          for (int64_t j = 0; j <= last; ++j) {
            double s = 0;
            for (int64_t d = 0; d < D; ++d) s += qv.get(at(q, b, h, i, d)) * kv.get(at(k, b, hk, j, d));
            double pij = std::exp(s * scale - l), dp = 0;
            for (int64_t d = 0; d < Dv; ++d) {
              dp += go.get(at(dout, b, h, i, d)) * vv.get(at(v, b, hk, j, d));
              int64_t o = at(dv, b, hk, j, d);
              gv.set(o, gv.get(o) + pij * go.get(at(dout, b, h, i, d)));
            }
            double ds = pij * (dp - delta) * scale;
            for (int64_t d = 0; d < D; ++d) {
              int64_t oq = at(dq, b, h, i, d), ok = at(dk, b, hk, j, d);
              gq.set(oq, gq.get(oq) + ds * kv.get(at(k, b, hk, j, d)));
              gk.set(ok, gk.get(ok) + ds * qv.get(at(q, b, h, i, d)));
            }
          }
        }
  }

  void arange(const Tensor& out, double start) override {
    View o(out);
    for (int64_t i = 0; i < out.numel(); ++i) o.set(i * out.strides()[0], start + double(i));
  }

  void rope_tables(const Tensor& cos, const Tensor& sin, double theta, int64_t first) override {
    View c(cos), s(sin);
    const int64_t T = cos.size(0), H = cos.size(1), D = 2 * H;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < H; ++i) {
        // as the reference computes it: float32 inverse frequencies, then the outer product
        float inv = float(1.0 / std::pow(theta, double(float(2 * i) / float(D))));
        double a = double(float(first + t) * inv);
        c.set(t * cos.strides()[0] + i * cos.strides()[1], std::cos(a));
        s.set(t * sin.strides()[0] + i * sin.strides()[1], std::sin(a));
      }
  }

  void argmax_last(const Tensor& out, const Tensor& in) override {
    View o(out), x(in);
    const int64_t n = in.size(-1), rows = in.numel() / std::max<int64_t>(n, 1);
    Shape lead(in.sizes().begin(), in.sizes().end() - 1);
    for (int64_t r = 0; r < rows; ++r) {
      // Row r's offset through the leading dims' strides.
      int64_t off = 0, rem = r;
      for (int64_t d = int64_t(lead.size()) - 1; d >= 0; --d) {
        off += (rem % lead[size_t(d)]) * in.strides()[size_t(d)];
        rem /= lead[size_t(d)];
      }
      int64_t best = 0;
      double bv = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        double val = x.get(off + j * in.strides().back());
        if (val > bv) bv = val, best = j;
      }
      o.set(r, double(best));
    }
  }

  // ---- what the Hugging Face models add ----
  void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed) override {
    View o(out), xv(x);
    uint8_t* m = static_cast<uint8_t*>(mask.data_ptr());
    int64_t i = 0;  // out is contiguous: the visit order is the element counter
    for_each_index(out.sizes(), {&o, &xv}, [&](auto off) {
      const bool keep = philox_keep(seed, uint64_t(i), p);
      m[i++] = keep;
      o.set(off[0], keep ? xv.get(off[1]) / (1.0 - p) : 0.0);
    });
  }

  void dropout_backward(const Tensor& out, const Tensor& grad, const Tensor& mask, double scale) override {
    View o(out), g(grad);
    const uint8_t* m = static_cast<const uint8_t*>(mask.data_ptr());
    int64_t i = 0;
    for_each_index(out.sizes(), {&o, &g}, [&](auto off) { o.set(off[0], m[i++] ? g.get(off[1]) * scale : 0.0); });
  }

  void attention_dropout(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                         bool causal, double scale, double p, uint64_t seed) override {
    View o(out), qv(q), kv(k), vv(v);
    std::unique_ptr<View> lv;
    if (lse.defined()) lv = std::make_unique<View>(lse);
    const int64_t B = q.size(0), H = q.size(1), Sq = q.size(2), D = q.size(3), Sk = k.size(2), Dv = v.size(3);
    const int64_t G = H / k.size(1);
    std::vector<double> s(static_cast<size_t>(Sk));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Sq; ++i) {
          const int64_t hk = h / G, last = causal ? std::min(i, Sk - 1) : Sk - 1;
          double mx = -std::numeric_limits<double>::infinity(), sum = 0;
          for (int64_t j = 0; j <= last; ++j) {
            double d = 0;
            for (int64_t e = 0; e < D; ++e) d += qv.get(at4(q, b, h, i, e)) * kv.get(at4(k, b, hk, j, e));
            mx = std::max(mx, s[size_t(j)] = d * scale);
          }
          for (int64_t j = 0; j <= last; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
          if (lv) lv->set(b * lse.strides()[0] + h * lse.strides()[1] + i * lse.strides()[2], mx + std::log(sum));
          const uint64_t row = uint64_t(((b * H + h) * Sq + i) * Sk);
          for (int64_t e = 0; e < Dv; ++e) {
            double acc = 0;
            for (int64_t j = 0; j <= last; ++j)
              if (philox_keep(seed, row + uint64_t(j), p)) acc += s[size_t(j)] * vv.get(at4(v, b, hk, j, e));
            o.set(at4(out, b, h, i, e), acc / sum / (1.0 - p));
          }
        }
  }

  void attention_dropout_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                  const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                  const Tensor& lse, bool causal, double scale, double p, uint64_t seed) override {
    View gq(dq), gk(dk), gv(dv), go(dout), qv(q), kv(k), vv(v), ov(out), lv(lse);
    const int64_t B = q.size(0), H = q.size(1), Sq = q.size(2), D = q.size(3), Sk = k.size(2), Dv = v.size(3);
    const int64_t G = H / k.size(1);
    for (const Tensor* t : {&dq, &dk, &dv}) fill(*t, 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Sq; ++i) {
          const int64_t hk = h / G, last = causal ? std::min(i, Sk - 1) : Sk - 1;
          const double l = lv.get(b * lse.strides()[0] + h * lse.strides()[1] + i * lse.strides()[2]);
          double delta = 0;  // rowsum(dO * O), O with the dropout applied
          for (int64_t e = 0; e < Dv; ++e) delta += go.get(at4(dout, b, h, i, e)) * ov.get(at4(out, b, h, i, e));
          const uint64_t row = uint64_t(((b * H + h) * Sq + i) * Sk);
          for (int64_t j = 0; j <= last; ++j) {
            double sc = 0, dp = 0;
            for (int64_t e = 0; e < D; ++e) sc += qv.get(at4(q, b, h, i, e)) * kv.get(at4(k, b, hk, j, e));
            const double pij = std::exp(sc * scale - l);
            const double z = philox_keep(seed, row + uint64_t(j), p) ? 1.0 / (1.0 - p) : 0.0;
            for (int64_t e = 0; e < Dv; ++e) {
              const double g = go.get(at4(dout, b, h, i, e));
              dp += g * vv.get(at4(v, b, hk, j, e));
              const int64_t ov_ = at4(dv, b, hk, j, e);
              gv.set(ov_, gv.get(ov_) + pij * z * g);
            }
            const double ds = pij * (dp * z - delta) * scale;
            for (int64_t e = 0; e < D; ++e) {
              const int64_t oq = at4(dq, b, h, i, e), ok = at4(dk, b, hk, j, e);
              gq.set(oq, gq.get(oq) + ds * kv.get(at4(k, b, hk, j, e)));
              gk.set(ok, gk.get(ok) + ds * qv.get(at4(q, b, h, i, e)));
            }
          }
        }
  }

  void softmax(const Tensor& out, const Tensor& in) override {
    log_softmax(out, in);
    unary(UnaryOp::Exp, out, out, 0);
  }

  void softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& y) override {
    View o(out), g(grad), yv(y);
    for (int64_t r = 0; r < y.size(0); ++r) {
      double dot = 0;
      for (int64_t c = 0; c < y.size(1); ++c) dot += g.get(at2(grad, r, c)) * yv.get(at2(y, r, c));
      for (int64_t c = 0; c < y.size(1); ++c)
        o.set(at2(out, r, c), yv.get(at2(y, r, c)) * (g.get(at2(grad, r, c)) - dot));
    }
  }

  void topk_rows(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t k) override {
    View vo(values), io(indices), x(in);
    std::vector<int64_t> order(size_t(in.size(1)));
    for (int64_t r = 0; r < in.size(0); ++r) {
      for (int64_t c = 0; c < in.size(1); ++c) order[size_t(c)] = c;
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return x.get(at2(in, r, a)) > x.get(at2(in, r, b)); });
      for (int64_t j = 0; j < k; ++j) {
        vo.set(at2(values, r, j), x.get(at2(in, r, order[size_t(j)])));
        io.set(at2(indices, r, j), double(order[size_t(j)]));
      }
    }
  }

  void scatter_rows(const Tensor& out, const Tensor& src, const Tensor& indices) override {
    View o(out), sv(src), iv(indices);
    for (int64_t r = 0; r < src.size(0); ++r)
      for (int64_t j = 0; j < src.size(1); ++j)
        o.set(at2(out, r, int64_t(iv.get(at2(indices, r, j)))), sv.get(at2(src, r, j)));
  }

  void sort_int64(const Tensor& values, const Tensor& perm, const Tensor& in) override {
    const int64_t* x = static_cast<const int64_t*>(in.data_ptr());
    int64_t *v = static_cast<int64_t*>(values.data_ptr()), *pi = static_cast<int64_t*>(perm.data_ptr());
    std::vector<int64_t> order(size_t(in.numel()));
    for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return x[a] < x[b]; });
    for (size_t i = 0; i < order.size(); ++i) {
      v[i] = x[order[i]];
      pi[i] = order[i];
    }
  }

  void index_div(const Tensor& out, const Tensor& in, int64_t d) override {
    const int64_t* x = static_cast<const int64_t*>(in.data_ptr());
    int64_t* o = static_cast<int64_t*>(out.data_ptr());
    for (int64_t i = 0; i < in.numel(); ++i) o[i] = x[i] / d;
  }

  void invert_permutation(const Tensor& out, const Tensor& perm) override {
    const int64_t* pi = static_cast<const int64_t*>(perm.data_ptr());
    int64_t* o = static_cast<int64_t*>(out.data_ptr());
    for (int64_t i = 0; i < perm.numel(); ++i) o[pi[i]] = i;
  }

  void group_offsets(const Tensor& counts, const Tensor& offsets, const Tensor& sorted_ids) override {
    const int64_t* ids = static_cast<const int64_t*>(sorted_ids.data_ptr());
    int32_t *c = static_cast<int32_t*>(counts.data_ptr()), *o = static_cast<int32_t*>(offsets.data_ptr());
    const int64_t E = counts.numel();
    for (int64_t e = 0; e < E; ++e) c[e] = 0;
    for (int64_t i = 0; i < sorted_ids.numel(); ++i)
      if (ids[i] >= 0 && ids[i] < E) ++c[ids[i]];
    int32_t run = 0;
    for (int64_t e = 0; e < E; ++e) o[e] = run += c[e];
  }

  void read_bytes(void* dst, const Tensor& src, size_t bytes) override { std::memcpy(dst, src.data_ptr(), bytes); }

  double item(const Tensor& t) override { return View(t).get(0); }

  bool all_finite(const Tensor& t) override {
    View x(t);
    bool ok = true;
    for_each_index(t.sizes(), {&x}, [&](auto off) { ok = ok && std::isfinite(x.get(off[0])); });
    return ok;
  }
};

}  // namespace

std::shared_ptr<Backend> make_cpu_backend() { return std::make_shared<CpuBackend>(); }

}  // namespace vramlab::engine
