#!/usr/bin/env bash
# The second session's figures of docs/vanilla.md from docs/vanilla/runs.json and factored.json (run summarise.py first).
set -eu
cd "$(dirname "$(readlink -f "$0")")"
P="python3 plot.py"
A=pre_d20_lr1e-2
$P M3e4.svg "M = 3·10⁴: 1 vs 3 layers, three training seeds (pre-LN, lr 1e-2, 150 epochs)" \
  L1_${A}_e150_wu5_M3e4="1 layer, seed 0" L1_${A}_e150_wu5_M3e4_s1="1 layer, seed 1" L1_${A}_e150_wu5_M3e4_s2="1 layer, seed 2" \
  L3_${A}_e150_wu5_M3e4="3 layers, seed 0" L3_${A}_e150_wu5_M3e4_s1="3 layers, seed 1" L3_${A}_e150_wu5_M3e4_s2="3 layers, seed 2"
$P M1e5.svg "M = 10⁵: 1 vs 3 layers, three training seeds (pre-LN, lr 1e-2, 60 epochs)" \
  L1_${A}_e60_wu5_M1e5="1 layer, seed 0" L1_${A}_e60_wu5_M1e5_s1="1 layer, seed 1" L1_${A}_e60_wu5_M1e5_s2="1 layer, seed 2" \
  L3_${A}_e60_wu5_M1e5="3 layers, seed 0" L3_${A}_e60_wu5_M1e5_s1="3 layers, seed 1" L3_${A}_e60_wu5_M1e5_s2="3 layers, seed 2"
$P seeds_l2_400ep.svg "M = 3000, pre-LN, lr 1e-2, l2 1e-4, 400 epochs: three training seeds" \
  L1_${A}_e400_wu5_l2e-4="1 layer, seed 0" L1_${A}_e400_wu5_l2e-4_s1="1 layer, seed 1" \
  L1_${A}_e400_wu5_l2e-4_s2="1 layer, seed 2" L3_${A}_e400_wu5_l2e-4="3 layers, seed 0" \
  L3_${A}_e400_wu5_l2e-4_s1="3 layers, seed 1" L3_${A}_e400_wu5_l2e-4_s2="3 layers, seed 2"
$P equal_budget_seeds.svg "M = 3000, equal modest budget (post-LN, Adam lr 2e-3, 100 epochs): three training seeds" \
  L1_post_d20_lr2e-3_e100="1 layer, seed 0" L1_post_d20_lr2e-3_e100_s1="1 layer, seed 1" \
  L1_post_d20_lr2e-3_e100_s2="1 layer, seed 2" L3_post_d20_lr2e-3_e100="3 layers, seed 0" \
  L3_post_d20_lr2e-3_e100_s1="3 layers, seed 1" L3_post_d20_lr2e-3_e100_s2="3 layers, seed 2"
$P sgd.svg "M = 3000, plain SGD (post-LN, 200 epochs)" \
  L1_post_d20_sgd3e-1_e200="1 layer, lr 0.3" L3_post_d20_sgd3e-1_e200="3 layers, lr 0.3" \
  L1_post_d20_sgd1_e200="1 layer, lr 1" L3_post_d20_sgd1_e200="3 layers, lr 1" \
  L1_post_d20_sgd1e-1_mom9_e200="1 layer, lr 0.1, mom. 0.9" L3_post_d20_sgd1e-1_mom9_e200="3 layers, lr 0.1, mom. 0.9"
$P dropout.svg "M = 3000, dropout 0.1" \
  L1_${A}_e400_wu5_do1e-1="1 layer, pre-LN lr 1e-2 400 ep" L3_${A}_e400_wu5_do1e-1="3 layers, pre-LN lr 1e-2 400 ep" \
  L1_post_d20_lr3e-3_e200_do1e-1="1 layer, post-LN lr 3e-3 200 ep" L3_post_d20_lr3e-3_e200_do1e-1="3 layers, post-LN lr 3e-3 200 ep"
E1="L1_${A}_e200_wu5,L1_${A}_e250_wu5_M1e4+L1_${A}_e250_wu5_M1e4_s1"
E1="$E1,L1_${A}_e150_wu5_M3e4+L1_${A}_e150_wu5_M3e4_s1+L1_${A}_e150_wu5_M3e4_s2,L1_${A}_e60_wu5_M1e5+L1_${A}_e60_wu5_M1e5_s1+L1_${A}_e60_wu5_M1e5_s2"
E3="${E1//L1_/L3_}"
python3 plot_vs_m.py vs_M.svg "Excess over ε* vs M (L = C = 20; vanilla: pre-LN, lr 1e-2)" \
  "vanilla transformer, 1 layer=$E1" "vanilla transformer, 3 layers=$E3" --factored
