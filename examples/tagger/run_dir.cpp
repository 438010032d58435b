#include "examples/tagger/run_dir.h"

#include <cmath>

#include "io/digest.h"
#include "io/json.h"
#include "tensor/error.h"

namespace tagger {

namespace fs = std::filesystem;
using qkv::data::Vocab;
using qkv::io::Json;

const qkv::examples::RunLayout kRunLayout{
    .program = "tagger",
    .files = {"words.txt", "tags.txt", "profile.csv"},
    .fresh_replaces_run = true,
    .budget_key = "epochs",
    .read_config = qkv::examples::config_reader<Config>(qkv::examples::MissingKeys::keep_defaults)};

namespace {

// The digest of a vocabulary: its tokens in id order. Two vocabularies of the same words in another
// order differ, as the meaning of the model's ids does.
std::string vocab_digest(const Vocab& vocab) {
  qkv::io::Fnv1a h;
  for (const std::string& token : vocab.tokens()) h.add(token);
  return h.hex();
}

Json vocab_digests(const Vocabs& vocabs) {
  return Json(Json::Object{{"words.txt", Json(vocab_digest(vocabs.words))},
                           {"tags.txt", Json(vocab_digest(vocabs.tags))}});
}

// The vocabularies in `dir` must be those the checkpoint was trained with: a reordered or edited
// line would silently change what the model's ids mean. Checkpoints saved before the digests were
// recorded have none; for them only the sizes are checked, by the shapes of the word embedding and
// of the output layer when the weights are loaded.
void check_vocab_digests(const qkv::examples::RunState& state, const fs::path& checkpoint_path, const fs::path& dir,
                         const Vocabs& vocabs) {
  const Json* recorded = state.extra("vocabularies");
  if (recorded == nullptr) return;
  for (const auto& [file, vocab] : {std::pair{"words.txt", &vocabs.words}, {"tags.txt", &vocabs.tags}}) {
    const Json* digest = recorded->find(file);
    if (digest == nullptr || !digest->is_string() || digest->as_string() != vocab_digest(*vocab)) {
      throw qkv::ValueError("tagger: " + (dir / file).string() + " is not the vocabulary " +
                            checkpoint_path.string() +
                            " was trained with (its digest differs): an edited or reordered line changes "
                            "what the model's ids mean");
    }
  }
}

Vocabs load_vocabs(const fs::path& dir, const Config& config) {
  return Vocabs{Vocab::load((dir / "words.txt").string()), Vocab::load((dir / "tags.txt").string()),
                lowercases_words(config)};
}

// The ranks a run was trained on: 1 unless the checkpoint says more.
int64_t saved_world_size(const qkv::examples::RunState& state, const fs::path& path) {
  const Json* n = state.extra("world_size");
  if (n == nullptr) return 1;
  if (!n->is_int() || n->as_int() < 2)
    throw qkv::FormatError("tagger: " + path.string() + ": \"world_size\" must be a whole number of ranks above 1");
  return n->as_int();
}

// Runs saved before the models took their input from TokenVectors kept the word embedding under
// another name: the Transformer's in its encoder (scaled by √d there, as TokenVectors scales it),
// the GRU's at the top, unscaled — so it is divided by √d here to give the same vectors.
void rename_old_embedding(qkv::nn::StateDict& state) {
  if (state.count("tokens.embedding.weight")) return;
  if (auto it = state.find("encoder.embedding.weight"); it != state.end()) {
    state.emplace("tokens.embedding.weight", it->second);
    state.erase(it);
  } else if (it = state.find("embedding.weight"); it != state.end()) {
    const float d = static_cast<float>(it->second.size(1));
    state.emplace("tokens.embedding.weight", it->second * (1.0f / std::sqrt(d)));
    state.erase(it);
  }
}

}  // namespace

Json::Object checkpoint_extras(const Vocabs& vocabs, int64_t world_size) {
  Json::Object extras{{"vocabularies", vocab_digests(vocabs)}};
  if (world_size > 1) extras.emplace_back("world_size", Json(world_size));
  return extras;
}

SavedRun load_saved_run(const std::string& run_dir, const std::string& checkpoint) {
  const fs::path dir = run_dir;
  const std::string which = fs::path(checkpoint).stem().string();  // "last" of "last.safetensors"
  qkv::examples::SavedRun saved = qkv::examples::load_saved_run(dir, kRunLayout, which);
  Config config = qkv::examples::config_of<Config>(saved, kRunLayout, qkv::examples::MissingKeys::keep_defaults);
  check_config_fits_tensors(config, saved.checkpoint.model, saved.file.string());
  Vocabs vocabs = load_vocabs(dir, config);
  check_vocab_digests(saved.state, saved.file, dir, vocabs);
  auto history = qkv::examples::History<EpochMetrics>::from_json(saved.state.history, saved.file.string());
  if (fs::is_regular_file(dir / "metrics.csv")) history.take_timings(qkv::io::read_text_file(dir / "metrics.csv", "tagger"));
  const int64_t world_size = saved_world_size(saved.state, saved.file);
  return SavedRun{.checkpoint_path = saved.file.string(),
                  .checkpoint = std::move(saved.checkpoint),
                  .config = std::move(config),
                  .vocabs = std::move(vocabs),
                  .history = std::move(history.rows),
                  .best_dev_acc = saved.state.best,
                  .world_size = world_size};
}

Run load_run(const std::string& run_dir) {
  SavedRun saved = load_saved_run(run_dir, "best.safetensors");
  std::shared_ptr<TaggerModel> model =
      make_model(saved.config, saved.vocabs.words.size(), saved.vocabs.tags.size());
  rename_old_embedding(saved.checkpoint.model);
  model->load_state_dict(saved.checkpoint.model);
  model->eval();
  return Run{std::move(saved.config), std::move(saved.vocabs), std::move(model)};
}

}  // namespace tagger
