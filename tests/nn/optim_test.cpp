// Optimizers (SGD, Adam, AdamW), learning-rate schedulers and gradient clipping against PyTorch. The constants
// between the two rules below are the output of tests/nn/optim_reference.py (run with python3; torch 2.15, the
// single-tensor implementations), pasted as printed and line-wrapped.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "sinter/optim.h"
#include "testing.h"

namespace sinter {
namespace {

using optim::Adam;
using optim::AdamOptions;
using optim::AdamW;
using optim::AdamWOptions;
using optim::Optimizer;
using optim::OptimizerParamGroup;
using optim::SGD;
using optim::SGDOptions;

struct OptimCase {
  std::string name;
  std::vector<double> p1_f32, p2_f32, p1_f64, p2_f64;
};
struct SchedulerCase {
  std::string name;
  std::vector<std::vector<double>> lrs;
};
struct ClipCase {
  double max_norm, norm_type, total_norm;
  std::vector<double> grad1, grad2;
};
constexpr double kInf = std::numeric_limits<double>::infinity();

// -----------------------------------------------------------------------------------------------------------
// torch 2.15.0+cu132
// Parameters after 5 steps: {name, float32 p1, float32 p2, float64 p1, float64 p2}.
const std::vector<OptimCase> kOptimCases = {
    {"sgd_plain",
     {-0.8107753992080688, -0.5450066328048706, -0.23455475270748138, 0.11566456407308578,
      0.48203232884407043, 0.8333348631858826},
     {-0.05533469840884209, 0.40012454986572266, 0.7821512818336487, 0.8973259925842285},
     {-0.8107754137632557, -0.5450066365801924, -0.2345547536938182, 0.11566455105923029, 0.48203235395531185,
      0.833334840266873},
     {-0.055334698267539686, 0.40012457649641686, 0.7821512292637297, 0.8973259044247357}},
    {"sgd_momentum",
     {-0.9465581178665161, -0.8613755702972412, -0.5827165246009827, -0.10054423660039902,
      0.49946296215057373, 1.0762070417404175},
     {-0.4847801923751831, 0.3878400921821594, 1.2050246000289917, 1.135846734046936},
     {-0.9465581584838907, -0.861375543445297, -0.5827165824042018, -0.1005442512752995, 0.49946295609029273,
      1.076206962326612},
     {-0.4847802391458701, 0.38784009630616834, 1.2050246020197533, 1.135846648352514}},
    {"sgd_nesterov",
     {-1.007333517074585, -0.9300007820129395, -0.6269161701202393, -0.09953039884567261, 0.5452134013175964,
      1.145176887512207},
     {-0.5991638898849487, 0.44891902804374695, 1.3520853519439697, 1.1534448862075806},
     {-1.0073335722471464, -0.9300008215154189, -0.6269161842052625, -0.09953041344243115, 0.5452134097826392,
      1.1451768786363672},
     {-0.5991639374134098, 0.44891901733359063, 1.3520853799442716, 1.1534448989879498}},
    {"sgd_weight_decay",
     {-0.8657171726226807, -0.6483358144760132, -0.3359716534614563, 0.06442542374134064, 0.5045020580291748,
      0.9172431826591492},
     {-0.20146839320659637, 0.4106910228729248, 0.9298136234283447, 0.958687961101532},
     {-0.8657172184480366, -0.6483358484483945, -0.3359716305476716, 0.06442541751740058, 0.5045020624328813,
      0.9172431364752793},
     {-0.20146839594229554, 0.4106910117865711, 0.9298134966865669, 0.9586879533368268}},
    {"sgd_maximize",
     {-0.5316020846366882, -0.022228684276342392, 0.28595709800720215, 0.38910552859306335,
      0.3797987997531891, 0.4035088121891022},
     {0.704254686832428, 0.29578396677970886, -0.033260148018598557, 0.5654234290122986},
     {-0.5316020461290103, -0.022228683405303897, 0.2859571450127159, 0.38910551611295713, 0.3797988268585252,
      0.4035088462561177},
     {0.704254710162078, 0.2957839546253624, -0.0332601674228241, 0.5654233393742067}},
    {"sgd_groups",
     {-0.9683979153633118, -0.877771258354187, -0.5859571695327759, -0.0891055017709732, 0.5202011466026306,
      1.0964912176132202},
     {0.03957453370094299, 0.3554215729236603, 0.6633260250091553, 0.8784576654434204},
     {-0.9683979538709897, -0.8777713165946962, -0.5859571450127159, -0.08910551611295714, 0.5202011731414747,
      1.0964911537438822},
     {0.03957452898379222, 0.35542160453746374, 0.6633260167422825, 0.8784576660625791}},
    {"adam",
     {-0.7774686813354492, -0.48817604780197144, -0.1809474378824234, 0.12824873626232147,
      0.45074084401130676, 0.7910884618759155},
     {0.06103406101465225, 0.34874528646469116, 0.6433599591255188, 0.8786182403564453},
     {-0.7774687367151943, -0.48817608668730755, -0.18094743985054912, 0.12824874212060286, 0.450740868756152,
      0.7910885121528645},
     {0.06103405809913644, 0.34874529503579166, 0.6433599407355888, 0.878618181344541}},
    {"adam_weight_decay",
     {-0.7599242329597473, -0.4860648810863495, -0.1801421195268631, 0.12730935215950012, 0.4450038969516754,
      0.7871116995811462},
     {0.06081461161375046, 0.3430435359477997, 0.6419042348861694, 0.8717395663261414},
     {-0.7599242223070625, -0.4860649320938289, -0.1801421228665588, 0.1273093430469921, 0.4450038954766358,
      0.7871117083937692},
     {0.06081461034831377, 0.34304352510377756, 0.6419042038191469, 0.8717395987798234}},
    {"adam_amsgrad",
     {-0.7772218585014343, -0.4854685068130493, -0.17780011892318726, 0.13139623403549194, 0.452627956867218,
      0.7890666127204895},
     {0.06359351426362991, 0.35210978984832764, 0.6413682103157043, 0.8753662705421448},
     {-0.7772218975151984, -0.48546852634760873, -0.17780010591076978, 0.13139623222403388,
      0.45262797032876406, 0.7890666541169448},
     {0.06359351764255133, 0.35210978260383224, 0.6413682375934514, 0.8753662110007692}},
    {"adam_maximize",
     {-0.7225313186645508, -0.41182395815849304, -0.11905261129140854, 0.1717512309551239, 0.4492591321468353,
      0.7089115977287292},
     {0.1389658898115158, 0.3512547016143799, 0.5566401481628418, 0.8213818669319153},
     {-0.7225313613350413, -0.41182398733346426, -0.11905260366700925, 0.17175122546508206,
      0.44925913810798385, 0.7089116010006221},
     {0.13896588563781329, 0.35125470761174277, 0.5566401288252055, 0.821381873581077}},
    {"adam_groups",
     {-0.7774686813354492, -0.48817604780197144, -0.1809474378824234, 0.12824873626232147,
      0.45074084401130676, 0.7910884618759155},
     {-0.09482970088720322, 0.3437264561653137, 0.8167997598648071, 0.9930909276008606},
     {-0.7774687367151943, -0.48817608668730755, -0.18094743985054912, 0.12824874212060286, 0.450740868756152,
      0.7910885121528645},
     {-0.09482970950431782, 0.3437264751789585, 0.8167997036779435, 0.9930909067227047}},
    {"adamw",
     {-0.7770890593528748, -0.48794177174568176, -0.18086419999599457, 0.12818053364753723,
      0.4505186676979065, 0.7907038927078247},
     {0.060993075370788574, 0.3485744297504425, 0.6430505514144897, 0.8781853914260864},
     {-0.7770891731757478, -0.48794185393480716, -0.18086421812230924, 0.1281805536372158,
      0.45051870311724634, 0.7907039776286326},
     {0.06099306999524143, 0.3485744857701811, 0.6430505576513443, 0.8781853619072334}},
    {"adamw_amsgrad",
     {-0.7736798524856567, -0.4858378469944, -0.180116668343544, 0.12756958603858948, 0.44852322340011597,
      0.7872500419616699},
     {0.06062747538089752, 0.3470402657985687, 0.6402697563171387, 0.8742978572845459},
     {-0.7736798715452766, -0.48583789299484575, -0.1801166542653675, 0.12756957034471872, 0.4485232075888709,
      0.7872499988531582},
     {0.06062746145935187, 0.347040287858564, 0.6402697332254035, 0.8742977095078068}},
};
// get_last_lr() of both groups (lr 0.1 and 0.05) after construction and after each of 12 steps.
const std::vector<SchedulerCase> kSchedulerCases = {
    {"step",
     {{0.1, 0.05},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.05, 0.025},
      {0.05, 0.025},
      {0.05, 0.025},
      {0.025, 0.0125},
      {0.025, 0.0125},
      {0.025, 0.0125},
      {0.0125, 0.00625},
      {0.0125, 0.00625},
      {0.0125, 0.00625},
      {0.00625, 0.003125}}},
    {"cosine",
     {{0.1, 0.05},
      {0.0905463412215599, 0.045320916362186214},
      {0.06579634122155989, 0.03307091636218621},
      {0.035203658778440096, 0.017929083637813786},
      {0.010453658778440105, 0.005679083637813789},
      {0.001, 0.001},
      {0.010453658778440102, 0.005679083637813788},
      {0.03520365877844012, 0.017929083637813797},
      {0.06579634122155993, 0.03307091636218623},
      {0.09054634122155995, 0.04532091636218624},
      {0.10000000000000005, 0.05000000000000003},
      {0.09054634122155998, 0.045320916362186256},
      {0.06579634122155995, 0.03307091636218624}}},
    {"linear",
     {{0.025, 0.0125},
      {0.043750000000000004, 0.021875000000000002},
      {0.06250000000000001, 0.03125000000000001},
      {0.08125000000000002, 0.04062500000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001}}},
    {"linear_default",
     {{0.03333333333333333, 0.016666666666666666},
      {0.04666666666666667, 0.023333333333333334},
      {0.060000000000000005, 0.030000000000000002},
      {0.07333333333333335, 0.036666666666666674},
      {0.08666666666666668, 0.04333333333333334},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.1, 0.05}}},
    {"lambda",
     {{0.1, 0.05},
      {0.09000000000000001, 0.045000000000000005},
      {0.08100000000000002, 0.04050000000000001},
      {0.0729, 0.03645},
      {0.06561, 0.032805},
      {0.05904900000000001, 0.029524500000000006},
      {0.05314410000000001, 0.026572050000000003},
      {0.04782969000000001, 0.023914845000000004},
      {0.04304672100000001, 0.021523360500000005},
      {0.03874204890000001, 0.019371024450000007},
      {0.03486784401000001, 0.017433922005000005},
      {0.031381059609000006, 0.015690529804500003},
      {0.028242953648100012, 0.014121476824050006}}},
    {"lambda_per_group",
     {{0.1, 0.05},
      {0.09000000000000001, 0.025},
      {0.08100000000000002, 0.016666666666666666},
      {0.0729, 0.0125},
      {0.06561, 0.010000000000000002},
      {0.05904900000000001, 0.008333333333333333},
      {0.05314410000000001, 0.007142857142857143},
      {0.04782969000000001, 0.00625},
      {0.04304672100000001, 0.005555555555555556},
      {0.03874204890000001, 0.005000000000000001},
      {0.03486784401000001, 0.004545454545454546},
      {0.031381059609000006, 0.004166666666666667},
      {0.028242953648100012, 0.0038461538461538464}}},
    {"sequential_warmup_cosine",
     {{0.010000000000000002, 0.005000000000000001},
      {0.04, 0.02},
      {0.07, 0.035},
      {0.1, 0.05},
      {0.09330127018922195, 0.046650635094610975},
      {0.07500000000000001, 0.037500000000000006},
      {0.05, 0.025},
      {0.025000000000000012, 0.012500000000000006},
      {0.006698729810778065, 0.0033493649053890325},
      {0.0, 0.0},
      {0.006698729810778065, 0.0033493649053890325},
      {0.025, 0.0125},
      {0.05000000000000004, 0.02500000000000002}}},
    {"sequential_three",
     {{0.05, 0.025},
      {0.07500000000000001, 0.037500000000000006},
      {0.1, 0.05},
      {0.1, 0.05},
      {0.05, 0.025},
      {0.05, 0.025},
      {0.1, 0.05},
      {0.08000000000000002, 0.04000000000000001},
      {0.06400000000000002, 0.03200000000000001},
      {0.051200000000000016, 0.025600000000000008},
      {0.04096000000000001, 0.020480000000000005},
      {0.03276800000000001, 0.016384000000000006},
      {0.026214400000000013, 0.013107200000000006}}},
};
// clip_grad_norm_ over a float32 [2, 3] and a float64 [4] gradient (those of step 0) and a parameter
// without one: {max_norm, norm_type, total norm, clipped float32 grad, clipped float64 grad}.
const std::vector<ClipCase> kClipCases = {
    {1.0,
     2.0,
     2.16779041493379,
     {0.0, 0.29717695713043213, 0.4545869827270508, 0.39819762110710144, 0.15452969074249268,
      -0.16181595623493195},
     {0.4612989945024496, 0.12339694067510523, -0.3952819203295529, -0.3348718420043709}},
    {0.5,
     kInf,
     1.0,
     {0.0, 0.32210850715637207, 0.49272435903549194, 0.4316042363643646, 0.16749390959739685,
      -0.17539143562316895},
     {0.49999950000050003, 0.1337492805630131, -0.42844394824052545, -0.36296578913428085}},
    {0.8,
     1.0,
     6.028967881188792,
     {0.0, 0.08548296988010406, 0.13076196610927582, 0.11454156041145325, 0.04445047676563263,
      -0.046546366065740585},
     {0.13269267361722656, 0.03549513475967279, -0.11370285967705787, -0.09632589830943039}},
    {100.0,
     2.0,
     2.16779041493379,
     {0.0, 0.6442176699638367, 0.9854497313499451, 0.8632093667984009, 0.33498814702033997,
      -0.35078322887420654},
     {1.0, 0.26749882862458735, -0.8568887533689473, -0.7259323042001399}},
};
// clip_grad_value_(0.3) of the same gradients.
const std::vector<double> kClipValue1 = {0.0,
                                         0.30000001192092896,
                                         0.30000001192092896,
                                         0.30000001192092896,
                                         0.30000001192092896,
                                         -0.30000001192092896};
const std::vector<double> kClipValue2 = {0.3, 0.26749882862458735, -0.3, -0.3};
// -----------------------------------------------------------------------------------------------------------

// The inputs of optim_reference.py: initial values and the gradient of step k, in float64.
std::vector<double> init_p1() {
  std::vector<double> v;
  for (int i = 0; i < 6; ++i) v.push_back((i - 2.5) * 0.3);
  return v;
}
std::vector<double> init_p2() {
  std::vector<double> v;
  for (int i = 0; i < 4; ++i) v.push_back(0.25 * i + 0.1);
  return v;
}
std::vector<double> grad_p1(int k) {
  std::vector<double> v;
  for (int i = 0; i < 6; ++i) v.push_back(std::sin(0.7 * i + k) / (k + 1));
  return v;
}
std::vector<double> grad_p2(int k) {
  std::vector<double> v;
  for (int i = 0; i < 4; ++i) v.push_back(std::cos(1.3 * i + 0.5 * k) / (k + 1));
  return v;
}

Tensor values(const std::vector<double>& v, DType dtype, const SymIntList& sizes) {
  return tensor(v, TensorOptions(kFloat64)).to(dtype).reshape(sizes);
}

struct Params {
  Tensor p1, p2;
};
Params make_params(DType dtype) {
  Params p{values(init_p1(), dtype, {2, 3}), values(init_p2(), dtype, {4})};
  p.p1.requires_grad_();
  p.p2.requires_grad_();
  return p;
}

void set_grads(Params p, int k) {  // Params holds handles: the tensors are the caller's
  p.p1.set_grad(values(grad_p1(k), p.p1.dtype(), {2, 3}));
  p.p2.set_grad(values(grad_p2(k), p.p2.dtype(), {4}));
}

// The optimizers of optim_reference.py's CASES. A LibTorch group with options has all of them (PyTorch's
// group dict inherits the missing ones from the defaults), hence the repeated momentum.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const Params& p) {
  const std::vector<Tensor> ps{p.p1, p.p2};
  if (name == "sgd_plain") return std::make_unique<SGD>(ps, SGDOptions(0.1));
  if (name == "sgd_momentum") return std::make_unique<SGD>(ps, SGDOptions(0.1).momentum(0.9).dampening(0.1));
  if (name == "sgd_nesterov") return std::make_unique<SGD>(ps, SGDOptions(0.1).momentum(0.9).nesterov(true));
  if (name == "sgd_weight_decay")
    return std::make_unique<SGD>(ps, SGDOptions(0.1).momentum(0.5).weight_decay(0.01));
  if (name == "sgd_maximize") return std::make_unique<SGD>(ps, SGDOptions(0.1).momentum(0.9).maximize(true));
  if (name == "sgd_groups")
    return std::make_unique<SGD>(
        std::vector<OptimizerParamGroup>{OptimizerParamGroup({p.p1}),
                                         OptimizerParamGroup({p.p2}, SGDOptions(0.01).momentum(0.9))},
        SGDOptions(0.1).momentum(0.9));
  if (name == "adam") return std::make_unique<Adam>(ps, AdamOptions(0.01));
  if (name == "adam_weight_decay") return std::make_unique<Adam>(ps, AdamOptions(0.01).weight_decay(0.1));
  if (name == "adam_amsgrad")
    return std::make_unique<Adam>(ps, AdamOptions(0.01).betas({0.8, 0.99}).amsgrad(true));
  if (name == "adam_maximize") return std::make_unique<Adam>(ps, AdamOptions(0.01).maximize(true).eps(1e-6));
  if (name == "adam_groups")
    return std::make_unique<Adam>(
        std::vector<OptimizerParamGroup>{OptimizerParamGroup({p.p1}),
                                         OptimizerParamGroup({p.p2}, AdamOptions(0.05))},
        AdamOptions(0.01));
  if (name == "adamw") return std::make_unique<AdamW>(ps, AdamWOptions(0.01));
  if (name == "adamw_amsgrad")
    return std::make_unique<AdamW>(ps, AdamWOptions(0.01).weight_decay(0.1).amsgrad(true));
  ADD_FAILURE() << "no optimizer named " << name;
  return nullptr;
}

const OptimCase& optim_case(const std::string& name) {
  for (const OptimCase& c : kOptimCases)
    if (c.name == name) return c;
  throw std::runtime_error("no case " + name);
}

// On x86-64 with g++ 12 the parameters equal PyTorch's bit for bit in both dtypes; the tolerance leaves room for
// a last-bit difference where a kernel contracts a multiply-add into an FMA.
double optim_tolerance(DType dtype) { return dtype == kFloat32 ? 1e-6 : 1e-13; }

void expect_reference(const OptimCase& c, const Params& p, DType dtype) {
  const bool f32 = dtype == kFloat32;
  EXPECT_EQ(p.p1.dtype(), dtype);
  EXPECT_CLOSE(p.p1, values(f32 ? c.p1_f32 : c.p1_f64, kFloat64, {2, 3}), optim_tolerance(dtype)) << c.name;
  EXPECT_CLOSE(p.p2, values(f32 ? c.p2_f32 : c.p2_f64, kFloat64, {4}), optim_tolerance(dtype)) << c.name;
}

TEST(OptimReference, FiveStepsMatchPyTorch) {
  for (const OptimCase& c : kOptimCases) {
    for (DType dtype : {kFloat32, kFloat64}) {
      SCOPED_TRACE(c.name + " " + std::string(dtype_name(dtype)));
      Params p = make_params(dtype);
      std::unique_ptr<Optimizer> opt = make_optimizer(c.name, p);
      for (int k = 0; k < 5; ++k) {
        set_grads(p, k);
        opt->step();
      }
      expect_reference(c, p, dtype);
      EXPECT_TRUE(p.p1.requires_grad());
      EXPECT_TRUE(p.p1.is_leaf());
    }
  }
}

TEST(OptimState, BuffersHaveTheParametersDTypeAndShape) {
  Params p = make_params(kFloat32);
  Adam opt({p.p1, p.p2}, AdamOptions(0.01).amsgrad(true));
  EXPECT_TRUE(opt.state(p.p1).empty());
  set_grads(p, 0);
  opt.step();
  opt.step();
  const auto& state = opt.state(p.p1);
  ASSERT_EQ(state.size(), 4u);
  EXPECT_EQ(state.at("step").item<int64_t>(), 2);
  for (const char* name : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}) {
    EXPECT_EQ(state.at(name).dtype(), kFloat32) << name;
    EXPECT_EQ(state.at(name).sizes(), p.p1.sizes()) << name;
  }
  SGD sgd({p.p2}, SGDOptions(0.1).momentum(0.9));
  sgd.step();
  Tensor buf = sgd.state(p.p2).at("momentum_buffer");
  EXPECT_TENSOR_EQ(buf, p.p2.grad());
  EXPECT_FALSE(buf.is_same(p.p2.grad()));  // a copy, as torch.clone
}

TEST(OptimStep, ParametersWithoutGradientAreSkipped) {
  Params p = make_params(kFloat64);
  Tensor frozen = values({1.0, 2.0, 3.0}, kFloat64, {3}).requires_grad_();
  Adam opt({p.p1, frozen, p.p2}, AdamOptions(0.01));
  for (int k = 0; k < 5; ++k) {
    set_grads(p, k);
    opt.step();
  }
  EXPECT_TENSOR_EQ(frozen, values({1.0, 2.0, 3.0}, kFloat64, {3}));
  EXPECT_TRUE(opt.state(frozen).empty());
  expect_reference(optim_case("adam"), p, kFloat64);
}

TEST(OptimStep, ClosureIsCalledAndItsLossReturned) {
  Params p = make_params(kFloat64);
  SGD opt({p.p1, p.p2}, SGDOptions(0.1));
  int calls = 0;
  Tensor loss = opt.step([&] {
    ++calls;
    set_grads(p, 0);
    return scalar_tensor(1.5, kFloat64);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(loss.item<double>(), 1.5);
  EXPECT_FALSE(opt.step().defined());
}

TEST(OptimZeroGrad, SetsToNoneOrZeroesInPlace) {
  Params p = make_params(kFloat32);
  SGD opt({p.p1, p.p2}, SGDOptions(0.1));
  set_grads(p, 0);
  opt.zero_grad();
  EXPECT_FALSE(p.p1.grad().defined());
  EXPECT_FALSE(p.p2.grad().defined());

  set_grads(p, 0);
  void* data = p.p1.grad().data_ptr();
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(p.p1.grad().defined());
  EXPECT_EQ(p.p1.grad().data_ptr(), data);
  EXPECT_TENSOR_EQ(p.p1.grad(), zeros({2, 3}));
  EXPECT_TENSOR_EQ(p.p2.grad(), zeros({4}));
  opt.zero_grad(false);  // p without a gradient stays without
  Tensor lone = zeros({2}).requires_grad_();
  SGD other({lone}, SGDOptions(0.1));
  other.zero_grad(false);
  EXPECT_FALSE(lone.grad().defined());
}

TEST(OptimParamGroups, EachGroupHasItsOwnLr) {
  Params p = make_params(kFloat64);
  std::unique_ptr<Optimizer> opt = make_optimizer("sgd_groups", p);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  EXPECT_EQ(opt->param_groups()[0].lr(), 0.1);
  EXPECT_EQ(opt->param_groups()[1].lr(), 0.01);
  EXPECT_EQ(static_cast<const SGDOptions&>(opt->param_groups()[0].options()).momentum(), 0.9);
  EXPECT_EQ(opt->parameters().size(), 2u);

  // A changed lr takes effect at the next step: plain SGD moves by -lr * grad.
  Tensor w = values({1.0, 1.0}, kFloat64, {2}).requires_grad_();
  SGD sgd({w}, SGDOptions(0.1));
  sgd.param_groups()[0].set_lr(0.5);
  w.set_grad(values({1.0, -2.0}, kFloat64, {2}));
  sgd.step();
  EXPECT_TENSOR_EQ(w, values({0.5, 2.0}, kFloat64, {2}));

  // add_param_group: a group without options gets the defaults.
  Tensor extra = zeros({3}, kFloat64).requires_grad_();
  sgd.add_param_group(OptimizerParamGroup({extra}));
  EXPECT_EQ(sgd.param_groups()[1].lr(), 0.1);
}

// Runs `name` 3 steps, copies its state into a second optimizer over copies of the parameters (made with
// other hyper-parameters), then runs both 2 more steps: equal to each other and to PyTorch's 5 steps.
void check_round_trip(const std::string& name, DType dtype, bool through_file) {
  SCOPED_TRACE(name + " " + std::string(dtype_name(dtype)));
  Params a = make_params(dtype);
  std::unique_ptr<Optimizer> opt_a = make_optimizer(name, a);
  for (int k = 0; k < 3; ++k) {
    set_grads(a, k);
    opt_a->step();
  }
  Params b{a.p1.detach().clone().requires_grad_(), a.p2.detach().clone().requires_grad_()};
  std::unique_ptr<Optimizer> opt_b;
  const bool two_groups = opt_a->param_groups().size() == 2;
  if (dynamic_cast<SGD*>(opt_a.get())) {
    opt_b = two_groups ? std::make_unique<SGD>(std::vector<OptimizerParamGroup>{OptimizerParamGroup({b.p1}),
                                                                                OptimizerParamGroup({b.p2})},
                                               SGDOptions(0.7))
                       : std::make_unique<SGD>(std::vector<Tensor>{b.p1, b.p2}, SGDOptions(0.7));
  } else if (dynamic_cast<AdamW*>(opt_a.get())) {
    opt_b = std::make_unique<AdamW>(std::vector<Tensor>{b.p1, b.p2}, AdamWOptions(0.7));
  } else {
    opt_b = two_groups ? std::make_unique<Adam>(std::vector<OptimizerParamGroup>{OptimizerParamGroup({b.p1}),
                                                                                 OptimizerParamGroup({b.p2})},
                                                AdamOptions(0.7))
                       : std::make_unique<Adam>(std::vector<Tensor>{b.p1, b.p2}, AdamOptions(0.7));
  }
  std::map<std::string, Tensor> state = opt_a->state_dict();
  if (through_file) {
    const std::string path =
        ::testing::TempDir() + "sinter_optim_" + std::to_string(::getpid()) + ".safetensors";
    nn::save_safetensors(path, state);
    state = nn::load_safetensors(path);
    std::remove(path.c_str());
  }
  opt_b->load_state_dict(state);
  EXPECT_EQ(opt_b->param_groups()[0].lr(), opt_a->param_groups()[0].lr());
  for (int k = 3; k < 5; ++k) {
    set_grads(a, k);
    set_grads(b, k);
    opt_a->step();
    opt_b->step();
  }
  EXPECT_TENSOR_EQ(b.p1, a.p1);
  EXPECT_TENSOR_EQ(b.p2, a.p2);
  expect_reference(optim_case(name), b, dtype);
}

TEST(OptimStateDict, RoundTripGivesIdenticalSteps) {
  for (const char* name : {"sgd_momentum", "sgd_groups", "adam_amsgrad", "adamw", "adam_groups"})
    for (DType dtype : {kFloat32, kFloat64}) check_round_trip(name, dtype, /*through_file=*/false);
  check_round_trip("adam_amsgrad", kFloat32, /*through_file=*/true);
}

TEST(OptimStateDict, KeysFollowTheDocumentedLayout) {
  Params p = make_params(kFloat32);
  std::unique_ptr<Optimizer> opt = make_optimizer("adam_groups", p);
  set_grads(p, 0);
  opt->step();
  std::map<std::string, Tensor> sd = opt->state_dict();
  EXPECT_EQ(sd.at("state.0.step").item<int64_t>(), 1);
  EXPECT_EQ(sd.at("state.1.exp_avg").sizes(), p.p2.sizes());
  EXPECT_EQ(sd.count("state.0.max_exp_avg_sq"), 0u);
  EXPECT_EQ(sd.at("param_groups.0.params").to_vector<int64_t>(), std::vector<int64_t>{0});
  EXPECT_EQ(sd.at("param_groups.1.params").to_vector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_EQ(sd.at("param_groups.1.lr").item<double>(), 0.05);
  EXPECT_EQ(sd.at("param_groups.0.beta2").item<double>(), 0.999);
  EXPECT_EQ(sd.at("param_groups.0.amsgrad").item<double>(), 0.0);
  EXPECT_EQ(sd.count("param_groups.0.initial_lr"), 0u);
  optim::StepLR sched(*opt, 2);
  EXPECT_EQ(opt->state_dict().at("param_groups.1.initial_lr").item<double>(), 0.05);
}

TEST(OptimStateDict, MismatchesAreErrors) {
  Params p = make_params(kFloat32);
  std::unique_ptr<Optimizer> two = make_optimizer("adam_groups", p);
  set_grads(p, 0);
  two->step();
  Adam one({p.p1, p.p2});
  EXPECT_ERROR(one.load_state_dict(two->state_dict()), "Adam", "load_state_dict", "2 parameter groups",
               "has 1");

  Tensor q = zeros({3}).requires_grad_();
  Tensor r = zeros({2}).requires_grad_();
  Adam other({OptimizerParamGroup({q}), OptimizerParamGroup({r})});
  EXPECT_ERROR(other.load_state_dict(two->state_dict()), "state.0.exp_avg", "[2, 3]", "[3]");

  std::map<std::string, Tensor> sd = one.state_dict();
  sd["param_groups.0.momentum"] = scalar_tensor(0.9, kFloat64);
  EXPECT_ERROR(one.load_state_dict(sd), "AdamOptions", "momentum");
  sd = one.state_dict();
  sd["param_groups.0.lr"] = scalar_tensor(-1.0, kFloat64);
  EXPECT_ERROR(one.load_state_dict(sd), "Adam", "learning rate", "-1");
  EXPECT_EQ(one.param_groups()[0].lr(), 1e-3);  // a refused load changes nothing
}

TEST(OptimErrors, InvalidOptionsNameTheOptimizerAndValue) {
  Tensor p = zeros({2}).requires_grad_();
  EXPECT_ERROR(SGD({p}, SGDOptions(-0.1)), "SGD", "learning rate", "-0.1");
  EXPECT_ERROR(SGD({p}, SGDOptions(0.1).momentum(-0.5)), "SGD", "momentum", "-0.5");
  EXPECT_ERROR(SGD({p}, SGDOptions(0.1).weight_decay(-1)), "SGD", "weight_decay", "-1");
  EXPECT_ERROR(SGD({p}, SGDOptions(0.1).nesterov(true)), "SGD", "Nesterov momentum requires a momentum");
  EXPECT_ERROR(SGD({p}, SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)), "SGD", "zero dampening",
               "0.1");
  EXPECT_ERROR(Adam({p}, AdamOptions(-1e-3)), "Adam", "learning rate", "-0.001");
  EXPECT_ERROR(Adam({p}, AdamOptions().betas({1.0, 0.999})), "Adam", "beta parameter at index 0", "1");
  EXPECT_ERROR(Adam({p}, AdamOptions().betas({0.9, -0.1})), "Adam", "beta parameter at index 1", "-0.1");
  EXPECT_ERROR(Adam({p}, AdamOptions().eps(-1e-8)), "Adam", "epsilon", "-1e-08");
  EXPECT_ERROR(Adam({p}, AdamOptions().weight_decay(-0.5)), "Adam", "weight_decay", "-0.5");
  EXPECT_ERROR(AdamW({p}, AdamWOptions(-2)), "AdamW", "learning rate", "-2");
  EXPECT_ERROR(AdamW({p}, AdamWOptions().betas({0.9, 1.0})), "AdamW", "index 1", "1");
  // A group's own options are checked too, and must be of the optimizer's type.
  EXPECT_ERROR(SGD({OptimizerParamGroup({p}, SGDOptions(-3))}, SGDOptions(0.1)), "SGD", "-3");
  EXPECT_ERROR(SGD({OptimizerParamGroup({p}, AdamOptions(0.1))}, SGDOptions(0.1)), "SGD", "SGDOptions");
}

TEST(OptimErrors, BadParameterLists) {
  Tensor p = zeros({2}).requires_grad_();
  EXPECT_ERROR(SGD(std::vector<Tensor>{}, SGDOptions(0.1)), "SGD", "empty parameter list");
  EXPECT_ERROR(Adam({p, p}), "Adam", "more than one parameter group");
  EXPECT_ERROR(SGD({OptimizerParamGroup({p}), OptimizerParamGroup({p})}, SGDOptions(0.1)), "SGD",
               "more than one parameter group");
  EXPECT_ERROR(SGD({Tensor()}, SGDOptions(0.1)), "SGD", "undefined");
  Tensor non_leaf = p * 2;
  ASSERT_FALSE(non_leaf.is_leaf());
  EXPECT_ERROR(SGD({non_leaf}, SGDOptions(0.1)), "SGD", "non-leaf");
}

// ---- schedulers ----

std::unique_ptr<optim::LRScheduler> make_scheduler(const std::string& name, Optimizer& o) {
  using namespace optim;
  if (name == "step") return std::make_unique<StepLR>(o, 3, 0.5);
  if (name == "cosine") return std::make_unique<CosineAnnealingLR>(o, 5, 0.001);
  if (name == "linear") return std::make_unique<LinearLR>(o, 0.25, 1.0, 4);
  if (name == "linear_default") return std::make_unique<LinearLR>(o);
  if (name == "lambda") return std::make_unique<LambdaLR>(o, [](int64_t e) { return std::pow(0.9, e); });
  if (name == "lambda_per_group")
    return std::make_unique<LambdaLR>(
        o, std::vector<LambdaLR::LrLambda>{[](int64_t e) { return std::pow(0.9, e); },
                                           [](int64_t e) { return 1.0 / static_cast<double>(e + 1); }});
  if (name == "sequential_warmup_cosine") {
    std::vector<std::shared_ptr<LRScheduler>> s{std::make_shared<LinearLR>(o, 0.1, 1.0, 3),
                                                std::make_shared<CosineAnnealingLR>(o, 6)};
    return std::make_unique<SequentialLR>(o, s, std::vector<int64_t>{3});
  }
  if (name == "sequential_three") {
    std::vector<std::shared_ptr<LRScheduler>> s{
        std::make_shared<LinearLR>(o, 0.5, 1.0, 2), std::make_shared<StepLR>(o, 2, 0.5),
        std::make_shared<LambdaLR>(o, [](int64_t e) { return std::pow(0.8, e); })};
    return std::make_unique<SequentialLR>(o, s, std::vector<int64_t>{2, 6});
  }
  ADD_FAILURE() << "no scheduler named " << name;
  return nullptr;
}

TEST(LrSchedReference, TwelveStepsMatchPyTorch) {
  for (const SchedulerCase& c : kSchedulerCases) {
    SCOPED_TRACE(c.name);
    Tensor p = zeros({1}).requires_grad_();
    Tensor q = zeros({1}).requires_grad_();
    SGD opt({OptimizerParamGroup({p}), OptimizerParamGroup({q}, SGDOptions(0.05))}, SGDOptions(0.1));
    std::unique_ptr<optim::LRScheduler> sched = make_scheduler(c.name, opt);
    for (size_t epoch = 0; epoch < c.lrs.size(); ++epoch) {
      if (epoch > 0) {
        opt.step();
        sched->step();
      }
      const std::vector<double>& got = sched->get_last_lr();
      ASSERT_EQ(got.size(), 2u);
      for (size_t g = 0; g < 2; ++g) {
        EXPECT_NEAR(got[g], c.lrs[epoch][g], 1e-12) << "epoch " << epoch << " group " << g;
        EXPECT_EQ(opt.param_groups()[g].lr(), got[g]);
      }
    }
  }
}

TEST(LrSched, BaseLrsComeFromTheFirstScheduler) {
  Tensor p = zeros({1}).requires_grad_();
  SGD opt({p}, SGDOptions(0.1));
  optim::LinearLR warmup(opt, 0.5, 1.0, 2);
  EXPECT_EQ(opt.param_groups()[0].lr(), 0.05);
  optim::StepLR step(opt, 2);  // made after the warm-up lowered the lr: base_lrs are still initial_lr
  EXPECT_EQ(step.base_lrs(), std::vector<double>{0.1});
  EXPECT_EQ(warmup.last_epoch(), 0);
}

TEST(LrSched, InvalidArgumentsAreErrors) {
  Tensor p = zeros({1}).requires_grad_();
  SGD opt({p}, SGDOptions(0.1));
  SGD other({zeros({1}).requires_grad_()}, SGDOptions(0.1));
  using namespace optim;
  EXPECT_ERROR(StepLR(opt, 0), "StepLR", "step_size", "0");
  EXPECT_ERROR(CosineAnnealingLR(opt, 0), "CosineAnnealingLR", "T_max");
  EXPECT_ERROR(LinearLR(opt, 0.0), "LinearLR", "starting multiplicative factor", "0");
  EXPECT_ERROR(LinearLR(opt, 1.5), "LinearLR", "starting multiplicative factor", "1.5");
  EXPECT_ERROR(LinearLR(opt, 0.5, 1.5), "LinearLR", "ending multiplicative factor", "1.5");
  EXPECT_ERROR(LinearLR(opt, 0.5, 1.0, 0), "LinearLR", "total_iters");
  EXPECT_ERROR(LambdaLR(opt, std::vector<LambdaLR::LrLambda>(2, [](int64_t) { return 1.0; })), "LambdaLR",
               "expected 1 lr_lambdas, but got 2");
  auto a = std::make_shared<StepLR>(opt, 2);
  auto b = std::make_shared<StepLR>(opt, 3);
  EXPECT_ERROR(SequentialLR(opt, {a, b}, {}), "SequentialLR", "number of schedulers 2",
               "milestones to be equal to 0");
  EXPECT_ERROR(SequentialLR(opt, {}, {}), "SequentialLR", "at least one scheduler");
  auto foreign = std::make_shared<StepLR>(other, 2);
  EXPECT_ERROR(SequentialLR(opt, {a, foreign}, {3}), "SequentialLR", "same optimizer", "scheduler 1");
}

// ---- gradient clipping ----

struct ClipParams {
  Tensor p1, p2, p3;  // float32 [2, 3] and float64 [4] with step 0's gradients; p3 without a gradient
};
ClipParams clip_params() {
  ClipParams c{zeros({2, 3}).requires_grad_(), zeros({4}, kFloat64).requires_grad_(),
               zeros({5}).requires_grad_()};
  c.p1.set_grad(values(grad_p1(0), kFloat32, {2, 3}));
  c.p2.set_grad(values(grad_p2(0), kFloat64, {4}));
  return c;
}

TEST(ClipGradNorm, MatchesPyTorch) {
  for (const ClipCase& c : kClipCases) {
    SCOPED_TRACE(fmt::format("max_norm {} norm_type {}", c.max_norm, c.norm_type));
    ClipParams p = clip_params();
    Tensor total = nn::utils::clip_grad_norm_({p.p1, p.p2, p.p3}, c.max_norm, c.norm_type);
    EXPECT_EQ(total.dim(), 0);
    EXPECT_EQ(total.dtype(), kFloat64);  // the norms of float32 and float64 gradients, stacked
    EXPECT_NEAR(total.item<double>(), c.total_norm, 1e-6 * c.total_norm);
    EXPECT_CLOSE(p.p1.grad(), values(c.grad1, kFloat64, {2, 3}), 1e-6);
    EXPECT_CLOSE(p.p2.grad(), values(c.grad2, kFloat64, {4}), 1e-6);
    EXPECT_EQ(p.p1.grad().dtype(), kFloat32);
    EXPECT_FALSE(p.p3.grad().defined());
  }
}

TEST(ClipGradNorm, NoChangeBelowMaxNorm) {
  ClipParams p = clip_params();
  Tensor g1 = p.p1.grad().clone();
  Tensor g2 = p.p2.grad().clone();
  Tensor total = nn::utils::clip_grad_norm_({p.p1, p.p2}, 100.0);
  EXPECT_TENSOR_EQ(p.p1.grad(), g1);
  EXPECT_TENSOR_EQ(p.p2.grad(), g2);
  EXPECT_NEAR(total.item<double>(), kClipCases[0].total_norm, 1e-6);
}

TEST(ClipGradNorm, OneTensorAndNoGradients) {
  Tensor w = zeros({2}, kFloat64).requires_grad_();
  w.set_grad(values({3.0, 4.0}, kFloat64, {2}));
  Tensor total = nn::utils::clip_grad_norm_(w, 1.0);
  EXPECT_DOUBLE_EQ(total.item<double>(), 5.0);
  EXPECT_CLOSE(w.grad(), values({0.6, 0.8}, kFloat64, {2}), 1e-6);
  Tensor none = zeros({2}).requires_grad_();
  Tensor zero = nn::utils::clip_grad_norm_({none}, 1.0);
  EXPECT_EQ(zero.item<double>(), 0.0);
  EXPECT_EQ(zero.dtype(), kFloat32);
}

TEST(ClipGradNorm, NonFiniteNormIsAnErrorWhenAsked) {
  Tensor w = zeros({2}).requires_grad_();
  w.set_grad(values({kInf, 1.0}, kFloat32, {2}));
  EXPECT_ERROR(nn::utils::clip_grad_norm_(w, 1.0, 2.0, /*error_if_nonfinite=*/true), "clip_grad_norm_",
               "non-finite", "error_if_nonfinite");
  Tensor total = nn::utils::clip_grad_norm_(w, 1.0);  // without the flag: scaled by max_norm / inf
  EXPECT_TRUE(std::isinf(total.item<double>()));
}

TEST(ClipGradValue, ClampsEveryGradient) {
  ClipParams p = clip_params();
  nn::utils::clip_grad_value_({p.p1, p.p2, p.p3}, 0.3);
  EXPECT_TENSOR_EQ(p.p1.grad(), values(kClipValue1, kFloat32, {2, 3}));
  EXPECT_TENSOR_EQ(p.p2.grad(), values(kClipValue2, kFloat64, {4}));
  EXPECT_FALSE(p.p3.grad().defined());
}

}  // namespace
}  // namespace sinter
