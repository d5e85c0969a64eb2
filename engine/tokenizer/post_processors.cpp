// Post-processors: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel (ids
// unchanged), Sequence. Only single sequences are encoded, so only the "single" templates apply.

#include "components.h"

namespace oxinfer::tokenizer {
namespace {

class Template : public PostProcessor {
public:
    // items: -1 for the sequence, else an index into specials_.
    Template(std::vector<int> items, std::vector<std::vector<int32_t>> specials) : items_(std::move(items)), specials_(std::move(specials)) {}
    void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
        if (!add_special_tokens) return;
        std::vector<int32_t> out;
        out.reserve(ids.size() + 4);
        for (int item : items_) {
            if (item < 0) out.insert(out.end(), ids.begin(), ids.end());
            else out.insert(out.end(), specials_[static_cast<size_t>(item)].begin(), specials_[static_cast<size_t>(item)].end());
        }
        ids.swap(out);
    }

private:
    std::vector<int> items_;
    std::vector<std::vector<int32_t>> specials_;
};

class NoOp : public PostProcessor {
public:
    void process(std::vector<int32_t>&, bool) const override {}
};

class Sequence : public PostProcessor {
public:
    explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> items) : items_(std::move(items)) {}
    void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
        for (const auto& item : items_) item->process(ids, add_special_tokens);
    }

private:
    std::vector<std::unique_ptr<PostProcessor>> items_;
};

std::unique_ptr<PostProcessor> make_template(const json& config) {
    const json& specials = json_field(config, "special_tokens");
    auto special_ids = [&](const std::string& name) -> std::vector<int32_t> {
        if (!specials.is_object() || !specials.contains(name))
            throw ConfigError("TemplateProcessing: special token '" + name + "' is not in special_tokens");
        const json& entry = specials.at(name);
        std::vector<int32_t> ids;
        for (const json& id : json_field(entry, "ids")) ids.push_back(id.get<int32_t>());
        return ids;
    };
    std::vector<int> items;
    std::vector<std::vector<int32_t>> ids;
    const json& single = json_field(config, "single");
    if (single.is_string()) {
        // "[CLS]:0 $A:0 [SEP]:0"
        std::string text = single.get<std::string>();
        size_t pos = 0;
        while (pos < text.size()) {
            while (pos < text.size() && text[pos] == ' ') ++pos;
            size_t end = text.find(' ', pos);
            if (end == std::string::npos) end = text.size();
            if (end == pos) break;
            std::string item = text.substr(pos, end - pos);
            const size_t colon = item.rfind(':');
            if (colon != std::string::npos && colon + 1 < item.size() && std::isdigit(static_cast<unsigned char>(item[colon + 1])))
                item = item.substr(0, colon);
            if (item == "$A" || item == "$B" || item == "$" || (item.size() > 1 && item[0] == '$')) items.push_back(-1);
            else {
                ids.push_back(special_ids(item));
                items.push_back(static_cast<int>(ids.size() - 1));
            }
            pos = end;
        }
    } else if (single.is_array()) {
        for (const json& piece : single) {
            if (piece.contains("Sequence")) items.push_back(-1);
            else if (piece.contains("SpecialToken")) {
                ids.push_back(special_ids(json_string(piece.at("SpecialToken"), "id")));
                items.push_back(static_cast<int>(ids.size() - 1));
            } else {
                throw ConfigError("TemplateProcessing: unknown template piece " + piece.dump());
            }
        }
    } else {
        throw ConfigError("TemplateProcessing: 'single' must be a template");
    }
    return std::make_unique<Template>(std::move(items), std::move(ids));
}

// BertProcessing / RobertaProcessing: "cls": ["[CLS]", 101], "sep": ["[SEP]", 102].
std::unique_ptr<PostProcessor> make_cls_sep(const json& config) {
    auto id_of = [&](const char* key) {
        const json& pair = json_field(config, key);
        if (!pair.is_array() || pair.size() != 2) throw ConfigError(std::string(key) + " must be [token, id]");
        return pair[1].get<int32_t>();
    };
    return std::make_unique<Template>(std::vector<int>{0, -1, 1}, std::vector<std::vector<int32_t>>{{id_of("cls")}, {id_of("sep")}});
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& config) {
    if (config.is_null()) return nullptr;
    if (!config.is_object()) throw ConfigError("post_processor must be an object");
    const std::string type = json_string(config, "type");
    if (type == "TemplateProcessing") return make_template(config);
    if (type == "BertProcessing" || type == "RobertaProcessing") return make_cls_sep(config);
    if (type == "ByteLevel") return std::make_unique<NoOp>();
    if (type == "Sequence") {
        std::vector<std::unique_ptr<PostProcessor>> items;
        for (const json& item : json_field(config, "processors"))
            if (auto processor = make_post_processor(item)) items.push_back(std::move(processor));
        return std::make_unique<Sequence>(std::move(items));
    }
    throw ConfigError("unknown post_processor type '" + type + "'");
}

}  // namespace oxinfer::tokenizer
