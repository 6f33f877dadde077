#!/bin/sh
# Real recordings of the second set of workloads no test had seen
# (tests/data/real_arch/real.tsv: tests/recorder/arch_models.py, recurrent nets,
# a ViT with fused AdamW, a GroupNorm UNet with transposed convolutions,
# a 3-D convolution video net, a padded TransformerEncoder, custom
# checkpointed blocks, an EmbeddingBag recommender and DistilBERT, each
# under the default settings, expandable_segments:True and
# max_split_size_mb:64,garbage_collection_threshold:0.6) reproduce exactly
# with `memsim run --recording`, as tests/real_hf.sh checks its set.
SET=real_arch SET_N=27
. "$(dirname "$0")/real_hf.sh"
