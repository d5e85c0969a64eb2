// oxinfer logits --model MODEL (--tokens "ID ..." | --prompt TEXT) --out OUT.npy [--last]

#include "args.h"
#include "commands.h"
#include "model_options.h"

#include <oxinfer/error.h>
#include <oxinfer/llm.h>
#include <oxinfer/npy.h>
#include <oxinfer/tokenizer.h>

#include <cstdio>

namespace oxinfer::cli {

int run_logits(const std::vector<std::string>& argv) {
    auto options = common_options();
    for (auto& o : model_load_options()) options.push_back(o);
    options.push_back({"model", "m", "MODEL", "model folder, .gguf file or cached repo id"});
    options.push_back({"tokens", "", "IDS", "token ids, space- or comma-separated"});
    options.push_back({"prompt", "p", "TEXT", "text, tokenized as `tokenize` does (special tokens added)"});
    options.push_back({"out", "o", "OUT.npy", "where to write the float32 logits"});
    options.push_back({"last", "", "", "only the last position: shape (1, vocab)"});
    Args args("logits", "--model MODEL (--tokens \"ID ID ...\" | --prompt TEXT) --out OUT.npy [--last]",
              "Runs the prompt as one prefill and writes the logits of every position, shape (positions, vocab),\n"
              "as a float32 .npy file.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const std::string out = args.required("out");
    if (args.value("tokens") && args.value("prompt")) throw Error("logits", "give --tokens or --prompt, not both");
    auto model = Model::load(args.required("model"), load_options(args));
    std::vector<int32_t> ids;
    if (auto tokens = args.value("tokens")) ids = parse_token_list(*tokens, "--tokens");
    else if (auto prompt = args.value("prompt")) ids = model->tokenizer().encode(*prompt, true);
    else throw Error("logits", "give --tokens or --prompt");
    if (ids.empty()) throw Error("--prompt", "tokenizes to no tokens");
    const bool last = args.flag("last");
    Session session(*model);
    const std::vector<float> logits = session.evaluate(ids, !last);
    const int64_t shape[] = {last ? 1 : static_cast<int64_t>(ids.size()), model->config().vocab_size};
    write_npy_f32(out, shape, logits);
    return 0;
}

}  // namespace oxinfer::cli
