// scratch: the centred CCQ read backward (one sequence, one head), checked by finite differences, and its float32
// accuracy against the uncentred float32 form (dλ, dc)
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
using std::vector;
struct In { int T, K; vector<double> q, k, c, lam, dqt, C0, m0; double z0; };

// uncentred forward: returns L = Σ dq̃·q̃
template <class R> R fwd_unc(const In& x) {
  int K = x.K; vector<R> C(x.C0.begin(), x.C0.end()), m(x.m0.begin(), x.m0.end()); R z = x.z0, L = 0;
  for (int t = 0; t < x.T; ++t) {
    R a = std::exp(R(x.c[t])); const double* k = &x.k[t * K]; const double* q = &x.q[t * K];
    for (int i = 0; i < K; ++i) for (int j = 0; j < K; ++j) C[i * K + j] = a * C[i * K + j] + R(k[i]) * R(k[j]);
    for (int i = 0; i < K; ++i) m[i] = a * m[i] + R(k[i]);
    z = a * z + 1;
    R mq = 0; for (int i = 0; i < K; ++i) mq += m[i] * R(q[i]);
    for (int i = 0; i < K; ++i) { R y = 0; for (int j = 0; j < K; ++j) y += C[i * K + j] * R(q[j]);
      R qt = R(q[i]) - R(x.lam[t]) * (y / z - m[i] * mq / (z * z)); L += R(x.dqt[t * K + i]) * qt; }
  }
  return L;
}
struct Out { vector<double> dq, dk, dc, dlam, dC0, dm0; double dz0; };
// centred forward + backward
template <class R> Out bwd_cent(const In& x) {
  int T = x.T, K = x.K; R z0 = x.z0;
  vector<R> z(T + 1), w(T), mu((T + 1) * K), del(T * K), M((T + 1) * K * K), Y(T * K);
  z[0] = z0;
  for (int i = 0; i < K; ++i) mu[i] = z0 > 0 ? R(x.m0[i]) / z0 : 0;
  for (int i = 0; i < K; ++i) for (int j = 0; j < K; ++j) M[i * K + j] = R(x.C0[i * K + j]) - (z0 > 0 ? R(x.m0[i]) * R(x.m0[j]) / z0 : 0);
  for (int t = 1; t <= T; ++t) {
    R a = std::exp(R(x.c[t - 1])); z[t] = a * z[t - 1] + 1; w[t - 1] = a * z[t - 1] / z[t];
    for (int i = 0; i < K; ++i) { del[(t - 1) * K + i] = R(x.k[(t - 1) * K + i]) - mu[(t - 1) * K + i];
      mu[t * K + i] = mu[(t - 1) * K + i] + del[(t - 1) * K + i] / z[t]; }
    for (int i = 0; i < K; ++i) for (int j = 0; j < K; ++j)
      M[t * K * K + i * K + j] = a * M[(t - 1) * K * K + i * K + j] + w[t - 1] * del[(t - 1) * K + i] * del[(t - 1) * K + j];
    for (int i = 0; i < K; ++i) { R y = 0; for (int j = 0; j < K; ++j) y += M[t * K * K + i * K + j] * R(x.q[(t - 1) * K + j]); Y[(t - 1) * K + i] = y; }
  }
  Out o; o.dq.assign(T * K, 0); o.dk.assign(T * K, 0); o.dc.assign(T, 0); o.dlam.assign(T, 0); o.dC0.assign(K * K, 0); o.dm0.assign(K, 0);
  vector<R> gz(T), dY(T * K);
  for (int t = 0; t < T; ++t) { R yd = 0; for (int i = 0; i < K; ++i) yd += Y[t * K + i] * R(x.dqt[t * K + i]);
    R zt = z[t + 1]; o.dlam[t] = double(-yd / zt); gz[t] = R(x.lam[t]) * yd / (zt * zt);
    for (int i = 0; i < K; ++i) { dY[t * K + i] = -R(x.lam[t]) * R(x.dqt[t * K + i]) / zt; o.dq[t * K + i] = x.dqt[t * K + i]; } }
  // the "pass" backward: S = M, Y = M q; key u = wδ, value δ; dM carried
  vector<R> dM(K * K, 0), dkey(T * K), dval(T * K), dla(T);
  for (int t = T; t >= 1; --t) {
    const R* q = nullptr; (void)q;
    for (int i = 0; i < K; ++i) for (int j = 0; j < K; ++j) dM[i * K + j] += dY[(t - 1) * K + i] * R(x.q[(t - 1) * K + j]);
    for (int i = 0; i < K; ++i) { R s = 0; for (int j = 0; j < K; ++j) s += M[t * K * K + i * K + j] * dY[(t - 1) * K + i] * 0; (void)s; }
    // dq += Mᵀ dY
    for (int j = 0; j < K; ++j) { R s = 0; for (int i = 0; i < K; ++i) s += M[t * K * K + i * K + j] * dY[(t - 1) * K + i]; o.dq[(t - 1) * K + j] += double(s); }
    // M_t = a M_{t-1} + w δ δᵀ  (key wδ on the left index? symmetric: dkey_i = Σ_j dM_ij δ_j, dval_j = Σ_i dM_ij (wδ_i))
    R a = std::exp(R(x.c[t - 1]));
    for (int i = 0; i < K; ++i) { R s1 = 0, s2 = 0; for (int j = 0; j < K; ++j) { s1 += dM[i * K + j] * del[(t - 1) * K + j]; s2 += dM[j * K + i] * w[t - 1] * del[(t - 1) * K + j]; }
      dkey[(t - 1) * K + i] = s1; dval[(t - 1) * K + i] = s2; }
    R la = 0; for (int e = 0; e < K * K; ++e) la += dM[e] * a * M[(t - 1) * K * K + e];
    dla[t - 1] = la;
    for (int e = 0; e < K * K; ++e) dM[e] *= a;
  }
  // dM is dM_0
  // μ scan
  vector<R> ddel(T * K), gmu(T * K), G(K, 0);
  for (int t = T; t >= 1; --t) for (int i = 0; i < K; ++i) {
    gmu[(t - 1) * K + i] = G[i];
    R e = w[t - 1] * dkey[(t - 1) * K + i] + dval[(t - 1) * K + i] + G[i] / z[t];
    ddel[(t - 1) * K + i] = e; G[i] -= e; o.dk[(t - 1) * K + i] = double(e); }
  // z scan
  R Gz = 0, Gz1 = 0;
  for (int t = T; t >= 1; --t) {
    R a = std::exp(R(x.c[t - 1])), dw = 0, s = 0;
    for (int i = 0; i < K; ++i) dw += dkey[(t - 1) * K + i] * del[(t - 1) * K + i], s += gmu[(t - 1) * K + i] * del[(t - 1) * K + i];
    R Gb = gz[t - 1] + Gz; if (t == 1) Gz1 = Gb;
    R Gt = Gb - dw * w[t - 1] / z[t] - s / (z[t] * z[t]);
    o.dc[t - 1] = double(a * z[t - 1] * Gt + dw * w[t - 1] + dla[t - 1]);
    Gz = a * Gt + dw * a / z[t];
  }
  if (T > 0) {
    R a1 = std::exp(R(x.c[0])), z1 = z[1]; R gm = 0, mdm = 0;
    for (int i = 0; i < K; ++i) gm += gmu[i] * mu[K + i];
    for (int i = 0; i < K; ++i) { R s = 0; for (int j = 0; j < K; ++j) { s += (dM[i * K + j] + dM[j * K + i]) * mu[K + j]; mdm += mu[K + i] * dM[i * K + j] * mu[K + j]; }
      o.dm0[i] = double(a1 * gmu[i] / z1 - s); }
    o.dz0 = double(a1 * Gz1 - a1 * gm / z1 + mdm);
    for (int e = 0; e < K * K; ++e) o.dC0[e] = double(dM[e]);
  } else o.dz0 = 0;
  return o;
}
int main(int argc, char** argv) {
  int T = atoi(argv[1]), K = atoi(argv[2]); double clo = atof(argv[3]); int stats = atoi(argv[4]);
  std::mt19937 rng(argc > 5 ? atoi(argv[5]) : 1); std::normal_distribution<double> N(0, 1); std::uniform_real_distribution<double> U(clo, 0), U1(0, 1);
  In x{T, K}; x.q.resize(T * K); x.k.resize(T * K); x.dqt.resize(T * K); x.c.resize(T); x.lam.resize(T); x.C0.assign(K * K, 0); x.m0.assign(K, 0); x.z0 = 0;
  for (auto& v : x.q) v = N(rng); for (auto& v : x.dqt) v = N(rng);
  for (int t = 0; t < T; ++t) { double ss = 0; for (int i = 0; i < K; ++i) ss += (x.k[t * K + i] = N(rng)) * x.k[t * K + i]; for (int i = 0; i < K; ++i) x.k[t * K + i] /= std::sqrt(ss); }
  for (auto& v : x.c) v = U(rng); for (auto& v : x.lam) v = U1(rng);
  if (stats) for (int j = 0; j < 12; ++j) { vector<double> kk(K); double ss = 0; for (auto& v : kk) ss += (v = N(rng)) * v; double wt = 1 - U1(rng); x.z0 += wt;
    for (int i = 0; i < K; ++i) { x.m0[i] += wt * kk[i] / std::sqrt(ss); for (int l = 0; l < K; ++l) x.C0[i * K + l] += wt * kk[i] * kk[l] / ss; } }
  Out o = bwd_cent<double>(x);
  // finite differences
  double h = 1e-6, worst = 0;
  auto fd = [&](double& p) { double s = p; p = s + h; double a = fwd_unc<double>(x); p = s - h; double b = fwd_unc<double>(x); p = s; return (a - b) / (2 * h); };
  auto chk = [&](const char* n, vector<double>& p, const vector<double>& g) { double num = 0, den = 0; for (size_t i = 0; i < p.size(); ++i) { double f = fd(p[i]); num += (f - g[i]) * (f - g[i]); den += f * f; }
    std::printf("  fd %-4s rel %.2e (|g| %.2e)\n", n, std::sqrt(num / (den + 1e-300)), std::sqrt(den)); };
  chk("q", x.q, o.dq); chk("k", x.k, o.dk); chk("c", x.c, o.dc); chk("lam", x.lam, o.dlam);
  if (stats) { chk("C0", x.C0, o.dC0); chk("m0", x.m0, o.dm0); vector<double> z{x.z0}; double f = fd(x.z0); std::printf("  fd z0 %.6e vs %.6e\n", f, o.dz0); }
  else { // dm0, dz0 at zero: fd around 0 with z0 = 0 (m0 = 0)
    chk("m0", x.m0, o.dm0); double f = fd(x.z0); std::printf("  fd z0 %.6e vs %.6e\n", f, o.dz0); }
  Out of = bwd_cent<float>(x);
  auto rel = [](const vector<double>& a, const vector<double>& b) { double n = 0, d = 0; for (size_t i = 0; i < a.size(); ++i) n += (a[i] - b[i]) * (a[i] - b[i]), d += b[i] * b[i]; return std::sqrt(n / d); };
  std::printf("  float32 centred: dlam %.2e dc %.2e dk %.2e dq %.2e\n", rel(of.dlam, o.dlam), rel(of.dc, o.dc), rel(of.dk, o.dk), rel(of.dq, o.dq));
}
