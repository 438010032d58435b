// The words of the built-in corpus and their tags: the 17 Universal POS tags, verbs with their
// forms and the frames that say what may follow them, nouns by kind, and the closed classes. Data
// only; the grammar (builtin_corpus.cpp) decides where each word goes, and is the one file that reads it.
#pragma once

namespace qkv::data::lexicon {

// ---- The 17 Universal POS tags (https://universaldependencies.org/u/pos/) -----------------------

constexpr const char* ADJ = "ADJ";
constexpr const char* ADP = "ADP";
constexpr const char* ADV = "ADV";
constexpr const char* AUX = "AUX";
constexpr const char* CCONJ = "CCONJ";
constexpr const char* DET = "DET";
constexpr const char* INTJ = "INTJ";
constexpr const char* NOUN = "NOUN";
constexpr const char* NUM = "NUM";
constexpr const char* PART = "PART";
constexpr const char* PRON = "PRON";
constexpr const char* PROPN = "PROPN";
constexpr const char* PUNCT = "PUNCT";
constexpr const char* SCONJ = "SCONJ";
constexpr const char* SYM = "SYM";
constexpr const char* VERB = "VERB";
constexpr const char* X = "X";

// ---- The lexicon ----------------------------------------------------------------------------

// What may follow a verb.
enum Frame : unsigned {
  kIntransitive = 1,   // "they sleep", "he runs fast", "she sings like a bird"
  kTransitive = 2,     // "they watch the light"
  kBareObject = 4,     // transitive, also with a bare plural or mass object: "they sell books"
  kThatClause = 8,     // "i know that the dog runs"
  kToInfinitive = 16,  // "they want to book a flight"
  kMotion = 32,        // "he came back", "she walked down the road"
};

struct Verb {
  const char *base, *s, *past, *participle, *ing;
  unsigned frames;
};

struct Noun {
  const char *sg, *pl;  // pl is nullptr for a mass noun
};

// Words that are both: the noun and the verb are spelled alike ("the watch", "they watch").
struct NounVerb {
  Noun noun;
  Verb verb;
  bool animate;  // can be a subject: "the fish fish", "the cook cooks"
};

constexpr unsigned I = kIntransitive, T = kTransitive, B = kBareObject | kTransitive, C = kThatClause,
                   V = kToInfinitive, M = kMotion;

const Verb kVerbs[] = {
    {"see", "sees", "saw", "seen", "seeing", T},
    {"find", "finds", "found", "found", "finding", T},
    {"take", "takes", "took", "taken", "taking", T},
    {"make", "makes", "made", "made", "making", T},
    {"know", "knows", "knew", "known", "knowing", T | C},
    {"think", "thinks", "thought", "thought", "thinking", C},
    {"say", "says", "said", "said", "saying", C},
    {"believe", "believes", "believed", "believed", "believing", C},
    {"eat", "eats", "ate", "eaten", "eating", I | B},
    {"love", "loves", "loved", "loved", "loving", B | V},
    {"hate", "hates", "hated", "hated", "hating", B},
    {"want", "wants", "wanted", "wanted", "wanting", B | V},
    {"need", "needs", "needed", "needed", "needing", B | V},
    {"like", "likes", "liked", "liked", "liking", B | V},
    {"try", "tries", "tried", "tried", "trying", V},
    {"read", "reads", "read", "read", "reading", I | B},
    {"write", "writes", "wrote", "written", "writing", I | T},
    {"open", "opens", "opened", "opened", "opening", T},
    {"close", "closes", "closed", "closed", "closing", T},
    {"clean", "cleans", "cleaned", "cleaned", "cleaning", T},
    {"empty", "empties", "emptied", "emptied", "emptying", T},
    {"dry", "dries", "dried", "dried", "drying", T},
    {"warm", "warms", "warmed", "warmed", "warming", T},
    {"clear", "clears", "cleared", "cleared", "clearing", T},
    {"free", "frees", "freed", "freed", "freeing", T},
    {"carry", "carries", "carried", "carried", "carrying", T},
    {"build", "builds", "built", "built", "building", T},
    {"buy", "buys", "bought", "bought", "buying", B},
    {"sell", "sells", "sold", "sold", "selling", B},
    {"bring", "brings", "brought", "brought", "bringing", T},
    {"hold", "holds", "held", "held", "holding", T},
    {"keep", "keeps", "kept", "kept", "keeping", T},
    {"meet", "meets", "met", "met", "meeting", T},
    {"follow", "follows", "followed", "followed", "following", T},
    {"hear", "hears", "heard", "heard", "hearing", T},
    {"catch", "catches", "caught", "caught", "catching", T},
    {"throw", "throws", "threw", "thrown", "throwing", T},
    {"wash", "washes", "washed", "washed", "washing", T},
    {"please", "pleases", "pleased", "pleased", "pleasing", T},
    {"have", "has", "had", "had", "having", B},
    {"do", "does", "did", "done", "doing", T},
    {"sing", "sings", "sang", "sung", "singing", I | T},
    {"sleep", "sleeps", "slept", "slept", "sleeping", I},
    {"swim", "swims", "swam", "swum", "swimming", I},
    {"laugh", "laughs", "laughed", "laughed", "laughing", I},
    {"cry", "cries", "cried", "cried", "crying", I},
    {"wait", "waits", "waited", "waited", "waiting", I},
    {"live", "lives", "lived", "lived", "living", I},
    {"stay", "stays", "stayed", "stayed", "staying", I},
    {"listen", "listens", "listened", "listened", "listening", I},
    {"arrive", "arrives", "arrived", "arrived", "arriving", I | M},
    {"sit", "sits", "sat", "sat", "sitting", I | M},
    {"stand", "stands", "stood", "stood", "standing", I | M},
    {"fall", "falls", "fell", "fallen", "falling", I | M},
    {"come", "comes", "came", "come", "coming", I | M},
    {"go", "goes", "went", "gone", "going", I | M},
    {"look", "looks", "looked", "looked", "looking", I | M},
    {"turn", "turns", "turned", "turned", "turning", I | M},
};

const NounVerb kNounVerbs[] = {
    {{"fish", "fish"}, {"fish", "fishes", "fished", "fished", "fishing", I}, true},
    {{"fly", "flies"}, {"fly", "flies", "flew", "flown", "flying", I | M}, true},
    {{"cook", "cooks"}, {"cook", "cooks", "cooked", "cooked", "cooking", I | T}, true},
    {{"guard", "guards"}, {"guard", "guards", "guarded", "guarded", "guarding", T}, true},
    {{"judge", "judges"}, {"judge", "judges", "judged", "judged", "judging", T}, true},
    {{"watch", "watches"}, {"watch", "watches", "watched", "watched", "watching", I | T}, false},
    {{"book", "books"}, {"book", "books", "booked", "booked", "booking", T}, false},
    {{"light", "lights"}, {"light", "lights", "lit", "lit", "lighting", T}, false},
    {{"saw", "saws"}, {"saw", "saws", "sawed", "sawn", "sawing", T}, false},
    {{"can", "cans"}, {"can", "cans", "canned", "canned", "canning", T}, false},
    {{"run", "runs"}, {"run", "runs", "ran", "run", "running", I | M}, false},
    {{"walk", "walks"}, {"walk", "walks", "walked", "walked", "walking", I | M}, false},
    {{"play", "plays"}, {"play", "plays", "played", "played", "playing", I | T}, false},
    {{"park", "parks"}, {"park", "parks", "parked", "parked", "parking", T}, false},
    {{"ring", "rings"}, {"ring", "rings", "rang", "rung", "ringing", I | T}, false},
    {{"train", "trains"}, {"train", "trains", "trained", "trained", "training", I | T}, false},
    {{"drink", "drinks"}, {"drink", "drinks", "drank", "drunk", "drinking", I | B}, false},
    {{"paint", nullptr}, {"paint", "paints", "painted", "painted", "painting", I | T}, false},
    {{"dance", "dances"}, {"dance", "dances", "danced", "danced", "dancing", I}, false},
    {{"call", "calls"}, {"call", "calls", "called", "called", "calling", T}, false},
    {{"plant", "plants"}, {"plant", "plants", "planted", "planted", "planting", T}, false},
    {{"dress", "dresses"}, {"dress", "dresses", "dressed", "dressed", "dressing", T}, false},
    {{"ship", "ships"}, {"ship", "ships", "shipped", "shipped", "shipping", T}, false},
    {{"show", "shows"}, {"show", "shows", "showed", "shown", "showing", T}, false},
    {{"smell", "smells"}, {"smell", "smells", "smelled", "smelled", "smelling", T}, false},
    {{"water", nullptr}, {"water", "waters", "watered", "watered", "watering", T}, false},
    {{"milk", nullptr}, {"milk", "milks", "milked", "milked", "milking", T}, false},
    {{"work", nullptr}, {"work", "works", "worked", "worked", "working", I}, false},
    {{"help", nullptr}, {"help", "helps", "helped", "helped", "helping", I | T}, false},
    {{"name", "names"}, {"name", "names", "named", "named", "naming", T}, false},
    {{"mark", "marks"}, {"mark", "marks", "marked", "marked", "marking", T}, false},
    {{"visit", "visits"}, {"visit", "visits", "visited", "visited", "visiting", T}, false},
    {{"jump", "jumps"}, {"jump", "jumps", "jumped", "jumped", "jumping", I | M}, false},
    {{"kiss", "kisses"}, {"kiss", "kisses", "kissed", "kissed", "kissing", T}, false},
    {{"cut", "cuts"}, {"cut", "cuts", "cut", "cut", "cutting", T}, false},
    {{"fire", "fires"}, {"fire", "fires", "fired", "fired", "firing", T}, false},
    {{"phone", "phones"}, {"phone", "phones", "phoned", "phoned", "phoning", T}, false},
    {{"wave", "waves"}, {"wave", "waves", "waved", "waved", "waving", I}, false},
    {{"smile", "smiles"}, {"smile", "smiles", "smiled", "smiled", "smiling", I}, false},
    {{"climb", "climbs"}, {"climb", "climbs", "climbed", "climbed", "climbing", I | T}, false},
    {{"store", "stores"}, {"store", "stores", "stored", "stored", "storing", T}, false},
    {{"brush", "brushes"}, {"brush", "brushes", "brushed", "brushed", "brushing", T}, false},
    {{"cover", "covers"}, {"cover", "covers", "covered", "covered", "covering", T}, false},
    {{"stamp", "stamps"}, {"stamp", "stamps", "stamped", "stamped", "stamping", T}, false},
};

const Noun kPeople[] = {
    {"man", "men"},        {"woman", "women"},      {"child", "children"},       {"boy", "boys"},
    {"girl", "girls"},     {"teacher", "teachers"}, {"student", "students"},     {"farmer", "farmers"},
    {"doctor", "doctors"}, {"nurse", "nurses"},     {"driver", "drivers"},       {"pilot", "pilots"},
    {"sailor", "sailors"}, {"soldier", "soldiers"}, {"king", "kings"},           {"queen", "queens"},
    {"baby", "babies"},    {"friend", "friends"},   {"neighbour", "neighbours"}, {"baker", "bakers"},
    {"singer", "singers"}, {"painter", "painters"}, {"hunter", "hunters"},       {"writer", "writers"},
    {"player", "players"}, {"uncle", "uncles"},     {"aunt", "aunts"},
};

const Noun kAnimals[] = {
    {"dog", "dogs"},       {"cat", "cats"},   {"horse", "horses"},   {"cow", "cows"},
    {"bird", "birds"},     {"mouse", "mice"}, {"rabbit", "rabbits"}, {"duck", "ducks"},
    {"wolf", "wolves"},    {"lion", "lions"}, {"monkey", "monkeys"}, {"goat", "goats"},
    {"frog", "frogs"},     {"fox", "foxes"},  {"tiger", "tigers"},   {"pig", "pigs"},
    {"parrot", "parrots"}, {"owl", "owls"},   {"eagle", "eagles"},
};

const Noun kThings[] = {
    {"house", "houses"},       {"car", "cars"},         {"city", "cities"},        {"river", "rivers"},
    {"table", "tables"},       {"window", "windows"},   {"garden", "gardens"},     {"letter", "letters"},
    {"song", "songs"},         {"story", "stories"},    {"tree", "trees"},         {"door", "doors"},
    {"road", "roads"},         {"bridge", "bridges"},   {"box", "boxes"},          {"bag", "bags"},
    {"ball", "balls"},         {"cup", "cups"},         {"key", "keys"},           {"bed", "beds"},
    {"chair", "chairs"},       {"hat", "hats"},         {"coat", "coats"},         {"apple", "apples"},
    {"bottle", "bottles"},     {"village", "villages"}, {"forest", "forests"},     {"island", "islands"},
    {"mountain", "mountains"}, {"school", "schools"},   {"room", "rooms"},         {"kitchen", "kitchens"},
    {"street", "streets"},     {"hill", "hills"},       {"wall", "walls"},         {"floor", "floors"},
    {"roof", "roofs"},         {"page", "pages"},       {"picture", "pictures"},   {"map", "maps"},
    {"coin", "coins"},         {"ticket", "tickets"},   {"flight", "flights"},     {"hotel", "hotels"},
    {"station", "stations"},   {"market", "markets"},   {"museum", "museums"},     {"library", "libraries"},
    {"office", "offices"},     {"shirt", "shirts"},     {"glass", "glasses"},      {"plate", "plates"},
    {"knife", "knives"},       {"spoon", "spoons"},     {"pen", "pens"},           {"desk", "desks"},
    {"lamp", "lamps"},         {"clock", "clocks"},     {"radio", "radios"},       {"guitar", "guitars"},
    {"piano", "pianos"},       {"bus", "buses"},        {"bicycle", "bicycles"},   {"boat", "boats"},
    {"lake", "lakes"},         {"beach", "beaches"},    {"field", "fields"},       {"flower", "flowers"},
    {"cake", "cakes"},         {"egg", "eggs"},         {"bench", "benches"},      {"basket", "baskets"},
    {"candle", "candles"},     {"jacket", "jackets"},   {"umbrella", "umbrellas"}, {"job", "jobs"},
    {"dish", "dishes"},        {"photo", "photos"},     {"gate", "gates"},         {"tower", "towers"},
    {"well", "wells"},
};

const Noun kMass[] = {
    {"tea", nullptr},   {"coffee", nullptr}, {"bread", nullptr}, {"rice", nullptr},
    {"money", nullptr}, {"music", nullptr},  {"soup", nullptr},  {"juice", nullptr},
    {"sugar", nullptr}, {"salt", nullptr},   {"sand", nullptr},  {"wood", nullptr},
    {"paper", nullptr}, {"gold", nullptr},   {"grass", nullptr}, {"homework", nullptr},
};

// Things that happen at a time, for "after the war", "until the morning".
const Noun kTimes[] = {
    {"morning", "mornings"}, {"evening", "evenings"}, {"night", "nights"},  {"summer", "summers"},
    {"winter", "winters"},   {"weekend", "weekends"}, {"party", "parties"}, {"game", "games"},
    {"war", "wars"},         {"holiday", "holidays"}, {"storm", "storms"},  {"concert", "concerts"},
    {"lesson", "lessons"},   {"dinner", "dinners"},
};

// Containers for "a cup of tea", "a box of books".
const char* const kContainers[] = {"cup", "glass", "bottle", "box", "bag", "basket", "plate"};

const char* const kPeopleNames[] = {"Anna", "Tom", "Maria", "John", "Lucy",
                                    "Sam",  "Mia", "Leo",   "Emma", "Ben"};
const char* const kPlaceNames[] = {"Paris", "London", "Rome", "Berlin", "Tokyo", "Madrid", "Oslo", "Cairo"};

// Adjectives that can go before a noun and after "be".
const char* const kAdjectives[] = {
    "big",       "small",  "old",     "young", "red",   "blue",   "green", "happy",  "sad",   "tall",
    "short",     "long",   "new",     "good",  "bad",   "hot",    "cold",  "little", "heavy", "quiet",
    "dark",      "bright", "strange", "busy",  "lazy",  "hungry", "angry", "brave",  "kind",  "clever",
    "beautiful", "ugly",   "rich",    "poor",  "tired", "famous", "wild",  "soft",   "sweet", "white",
    "black",     "yellow", "nice",    "funny", "warm",  "open",   "close", "clean",  "empty", "dry",
    "clear",     "free",   "fast",    "hard",  "late",  "early",  "high",  "still",  "right",
};
// Attributive only: "the only dog", "the back door", "a round table".
const char* const kAttributiveOnly[] = {"only", "back", "round"};
// Nouns a story can be about: "a book about the war".
const char* const kTopicNouns[] = {"story", "book", "song", "letter", "picture", "photo", "show"};
// Adjectives that also serve as adverbs after a verb: "a fast car", "he runs fast".
const char* const kFlatAdverbs[] = {"fast", "hard", "late", "early", "high", "well"};
const char* const kMannerAdverbs[] = {"quickly", "slowly", "quietly", "happily", "carefully",
                                      "badly",   "loudly", "softly",  "easily",  "sadly"};
// Before the verb: "they often sing".
const char* const kFrequencyAdverbs[] = {"often",  "never", "always", "sometimes", "usually",
                                         "rarely", "also",  "still",  "only"};
// At the end of a clause: "they sang again".
const char* const kTimeAdverbs[] = {"now", "again", "soon", "later", "then", "here", "there"};
const char* const kDegreeAdverbs[] = {"very", "too", "quite", "really", "so"};
// Particles after motion verbs: "he came back", "she sat down".
const char* const kParticles[] = {"back", "down", "up", "around", "round", "over"};

const char* const kPlaceAdpositions[] = {"in",     "on",   "at",   "near", "under",
                                         "behind", "with", "from", "by",   "without"};
const char* const kMotionAdpositions[] = {"to",   "into", "across", "through", "over",
                                          "down", "up",   "around", "round",   "along"};
const char* const kTimeAdpositions[] = {"after", "before", "since", "until", "during"};
const char* const kSubordinators[] = {"because", "if",     "when",  "while", "although",
                                      "after",   "before", "since", "until", "as"};
// Subjects of "i like that .", "we sell apples , eggs , etc ."
const char* const kSpeakers[] = {"i", "you", "we", "they"};
const char* const kModals[] = {"can", "could", "will", "would", "should", "must", "might"};
const char* const kNumbers[] = {"two",   "three", "four",   "five", "six", "seven",
                                "eight", "ten",   "twenty", "3",    "5",   "12"};
// Not "her": object "her" followed by a noun-verb word reads as possessive too, and "the men with
// her can swim" would have two parses ("can" AUX or NOUN). Here "her" is only possessive.
const char* const kObjectPronouns[] = {"me", "you", "him", "it", "us", "them"};
const char* const kPossessives[] = {"my", "your", "his", "her", "its", "our", "their"};
const char* const kInterjections[] = {"oh", "yes", "no", "well", "right", "hey", "okay", "wow"};

}  // namespace qkv::data::lexicon
