#pragma once
// Which files of a repo to download.
//  - --include globs (fnmatch as huggingface_hub's allow_patterns: '*' also matches '/', a
//    pattern ending in '/' means everything under that folder);
//  - a GGUF repo: one quantization (all parts of a split file), plus one multimodal projector;
//  - a safetensors (or torch) repo: the config, tokenizer, chat template, processor configs and
//    weights (shards and index; sentence-transformers modules; diffusers components), nothing else.

#include <oxinfer/hf_cache.h>
#include <oxinfer/hub/hub_types.h>

#include <vector>

namespace oxinfer::hub {

bool glob_match(const QString& pattern, const QString& path);
QList<RepoFile> filter_files(const QList<RepoFile>& files, const QStringList& include);

// GGUF variants of the repo, smallest first (see oxinfer::hf::group_gguf_files).
std::vector<hf::GgufVariant> gguf_variants(const QList<RepoFile>& files);
// True when the repo holds GGUF files and no safetensors / torch weights.
bool is_gguf_repo(const QList<RepoFile>& files);
// The variant's files, and the repo's multimodal projector (F16 preferred) when there is one.
QList<RepoFile> select_gguf_variant(const QList<RepoFile>& files, const hf::GgufVariant& variant);
// What the engine needs from a safetensors / torch repo.
QList<RepoFile> select_engine_files(const QList<RepoFile>& files);

qint64 total_size(const QList<RepoFile>& files);

}  // namespace oxinfer::hub
