"""The closed word classes the support check reads, per language (en, de, bg, ru, el; a language not
listed reads English's). Written as folded text (no accents, lower case) or folded by the reader.
A word is read only in its own language: Bulgarian "ни" (us) is no Russian "ни", German "Not" no
English "not". Open-class words (everything else) are looked up in the sources by stem and lemma."""

MAGNITUDES = {
    "en": {"hundred": 2, "thousand": 3, "million": 6, "billion": 9, "trillion": 12, "bn": 9, "mn": 6},
    "de": {"hundert": 2, "tausend": 3, "million": 6, "millionen": 6, "mio": 6, "milliarde": 9, "milliarden": 9,
           "mrd": 9, "billion": 12, "billionen": 12},
    "bg": {"хиляда": 3, "хиляди": 3, "хил": 3, "милион": 6, "милиона": 6, "милиони": 6, "млн": 6,
           "милиард": 9, "милиарда": 9, "милиарди": 9, "млрд": 9, "трилион": 12, "трилиона": 12},
    "ru": {"тысяча": 3, "тысячи": 3, "тысяч": 3, "тыс": 3, "миллион": 6, "миллиона": 6, "миллионов": 6,
           "млн": 6, "миллиард": 9, "миллиарда": 9, "миллиардов": 9, "млрд": 9},
    "el": {"χιλιαδες": 3, "χιλιαδων": 3, "εκατομμυριο": 6, "εκατομμυρια": 6, "εκατομμυριων": 6, "εκατ": 6,
           "δισεκατομμυριο": 9, "δισεκατομμυρια": 9, "δισ": 9},
    "fr": {"mille": 3, "million": 6, "millions": 6, "milliard": 9, "milliards": 9},
    "es": {"mil": 3, "millon": 6, "millones": 6},
}  # fmt: skip
NEGATIONS = {
    "en": {"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot", "hardly",
           "fails", "fail", "failed", "lacks", "lack"},
    "de": {"nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals", "ohne", "weder",
           "nichts", "niemand", "fehlt", "fehlen"},
    "bg": {"не", "няма", "нямат", "нямаше", "никога", "без", "нито", "никой", "никоя", "никое", "нищо", "липсва",
           "липсват"},
    "ru": {"не", "нет", "нельзя", "никогда", "без", "ни", "никто", "ничего", "ничто", "отсутствует", "отсутствуют"},
    "el": {"δεν", "μην", "μη", "οχι", "ποτε", "χωρις", "ουτε", "κανενας", "καμια", "κανενα", "τιποτα", "λειπει",
           "λειπουν"},
    "fr": {"ne", "pas", "jamais", "sans", "aucun", "aucune", "rien", "personne"},
    "es": {"no", "nunca", "sin", "ningun", "ninguna", "ninguno", "jamas", "nada", "nadie"},
}  # fmt: skip
NOUN_NEGATIONS = {  # negations of a noun (`no oil`), not of the verb: they reach the words right after them
    "en": {"no", "without", "none", "lacks", "lack", "neither", "nor"},
    "de": {"kein", "keine", "keinen", "keinem", "keiner", "keines", "ohne", "weder", "fehlt", "fehlen"},
    "bg": {"без", "няма", "нямат", "нямаше", "нито", "липсва", "липсват"},
    "ru": {"без", "нет", "ни", "отсутствует", "отсутствуют"}, "el": {"χωρις", "ουτε", "λειπει", "λειπουν"},
}  # fmt: skip
COORDINATORS = {"en": {"and", "but", "or"}, "de": {"und", "aber", "oder", "sondern"}, "bg": {"и", "но", "а", "или"},
                "ru": {"и", "но", "а", "или"}, "el": {"και", "αλλα", "η"}}  # fmt: skip
RANGE_WORDS = {  # between two numbers of one unit: `2 to 8 °C`, `between 5 and 40 °C`
    "en": {"to", "and"}, "de": {"bis", "und"}, "bg": {"до", "и"}, "ru": {"до", "и"}, "el": {"εως", "μεχρι", "και"},
}  # fmt: skip
NEGATION_PREFIXES = {  # a word made of one of these and a word the sources hold negates it: `unsafe`, `несудоходна`
    "en": ("un", "non", "in", "im", "il", "ir", "dis"), "de": ("un", "nicht"), "bg": ("не", "без"),
    "ru": ("не", "без"), "el": ("μη",),
}  # fmt: skip
NOT_NEGATING = {"only", "just", "merely", "solely", "nur", "само", "только", "μονο"}  # "not only X" says X
QUANTIFIERS = {  # class -> words
    "en": {"all": {"all", "every", "entire", "each"}, "some": {"some", "several", "few"},
           "most": {"most", "majority"}, "many": {"many", "numerous"}},
    "de": {"all": {"alle", "allen", "aller", "jeder", "jede", "jedes", "jeden", "jedem", "samtliche"},
           "some": {"einige", "einigen", "einiger", "manche", "manchen", "mehrere", "wenige", "wenigen"},
           "most": {"meisten", "meiste", "mehrheit"}, "many": {"viele", "vielen"}},
    "bg": {"all": {"всички", "всеки", "всяка", "всяко", "целия", "цялата", "цялото"},
           "some": {"някои", "няколко", "малко"}, "most": {"повечето", "мнозинството"},
           "many": {"много", "многобройни"}},
    "ru": {"all": {"все", "всех", "всем", "всеми", "каждый", "каждая", "каждое", "каждую", "каждого", "каждой"},
           "some": {"некоторые", "некоторых", "несколько"}, "most": {"большинство", "большинства"},
           "many": {"многие", "многих", "много"}},
    "el": {"all": {"ολοι", "ολες", "ολα", "ολων", "καθε"}, "some": {"μερικοι", "μερικες", "μερικα", "ορισμενοι",
           "ορισμενες", "ορισμενα"}, "most": {"περισσοτεροι", "περισσοτερες", "περισσοτερα"},
           "many": {"πολλοι", "πολλες", "πολλα"}},
}  # fmt: skip
EVERY = {"en": {"every", "each"}, "de": {"jeder", "jede", "jedes", "jeden", "jedem", "alle"},
         "bg": {"всеки", "всяка", "всяко"}, "ru": {"каждый", "каждая", "каждое", "каждую", "каждого", "ежегодно"},
         "el": {"καθε"}}  # fmt: skip
ATTRIBUTION = {  # words that speak of the sources or of the exchange, not of the world
    "en": {"according", "source", "sources", "document", "documents", "passage", "passages", "context", "text",
           "mentioned", "mention", "answer", "question", "say", "says", "state", "states", "stated", "yes", "article",
           "articles", "paragraph", "entry"},
    "de": {"laut", "zufolge", "quelle", "quellen", "dokument", "dokumente", "dokumenten", "text", "textes",
           "abschnitt", "erwahnt", "genannt", "steht", "heißt", "heisst", "antwort", "frage", "ja", "nein", "artikel",
           "artikels", "beitrag"},
    "bg": {"според", "източник", "източника", "източникът", "източници", "източниците", "документ", "документа",
           "документът", "документи", "документите", "текст", "текста", "текстът", "откъс", "откъса", "отговор",
           "отговора", "отговорът", "въпрос", "въпроса", "въпросът", "да", "статия", "статията", "материал",
           "материала", "материалът"},
    "ru": {"согласно", "источник", "источника", "источнику", "источнике", "источники", "источниках", "документ",
           "документа", "документе", "текст", "текста", "тексту", "тексте", "ответ", "вопрос", "да", "статья",
           "статье", "статьи", "статью", "материал", "материале"},
    "el": {"συμφωνα", "πηγη", "πηγες", "πηγης", "πηγων", "εγγραφο", "εγγραφου", "κειμενο", "κειμενου", "κειμενα",
           "απαντηση", "ερωτηση", "ναι", "αρθρο", "αρθρου", "λημμα"},
}  # fmt: skip
SPEECH = {  # verbs of saying: beside a word about the sources (`the text says that`) they frame, not claim
    "en": {"say", "says", "said", "state", "states", "stated", "mention", "mentions", "mentioned", "note", "notes",
           "noted", "report", "reports", "reported", "indicate", "indicates", "indicated", "write", "writes",
           "written", "describe", "describes", "described", "explain", "explains", "explained", "tell", "tells"},
    "de": {"sagt", "besagt", "heißt", "heisst", "steht", "nennt", "genannt", "erwahnt", "beschreibt", "beschrieben",
           "berichtet", "schreibt", "geschrieben", "erklart", "angegeben", "gibt", "an"},
    "bg": {"казва", "каза", "пише", "посочва", "посочено", "посочен", "споменава", "споменато", "гласи", "описва",
           "описано", "твърди", "казано", "написано", "отбелязва", "отбелязано"},
    "ru": {"сказано", "указано", "говорится", "написано", "упоминается", "утверждается", "сообщается", "отмечается",
           "описывается", "говорит", "пишет", "указывает", "сообщает", "отмечает", "утверждает", "упомянуто"},
    "el": {"αναφερει", "αναφερεται", "αναφερουν", "λεει", "λενε", "γραφει", "σημειωνει", "περιγραφει",
           "δηλωνει", "επισημαινει", "αναφερθηκε", "γραφεται"},
}  # fmt: skip
APPROXIMATE = {  # hedges on a number, each as good as another: no claim
    "en": {"about", "around", "approximately", "roughly", "circa", "ca", "nearly", "almost", "over",
           "just", "exactly", "precisely", "mainly", "mostly", "largely", "primarily", "chiefly"},
    "de": {"etwa", "rund", "ungefahr", "circa", "ca", "knapp", "fast", "beinahe", "genau"},
    "bg": {"около", "приблизително", "близо", "почти", "към", "точно"},
    "ru": {"около", "примерно", "приблизительно", "почти", "порядка", "ровно", "свыше"},
    "el": {"περιπου", "γυρω", "σχεδον", "ακριβως", "κοντα"},
}  # fmt: skip
CLAUSE_WORDS = {  # words that open a subordinate clause: a negation before them does not reach past them
    "en": {"because", "since", "although", "while", "when", "if", "which", "who", "whereas"},
    "de": {"weil", "obwohl", "wenn", "deshalb", "deswegen", "wahrend", "falls"},
    "bg": {"защото", "ако", "когато", "който", "която", "което", "които", "затова", "докато"},
    "ru": {"потому", "если", "когда", "который", "которая", "которое", "которые", "поэтому", "хотя", "пока"},
    "el": {"γιατι", "επειδη", "οταν", "αν", "που", "ενω", "αφου"},
}  # fmt: skip
NUMBER_WORDS = {  # a number in words is that number, on either side
    "en": {"zero": 0, "one": 1, "single": 1, "two": 2, "both": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
           "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
           "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
           "ninety": 90, "hundred": 100, "thousand": 1000, "dozen": 12, "twice": 2, "thrice": 3},
    "de": {"null": 0, "eins": 1, "einmal": 1, "zwei": 2, "beide": 2, "beiden": 2, "zweimal": 2, "drei": 3,
           "dreimal": 3, "vier": 4, "funf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10,
           "elf": 11, "zwolf": 12, "dreizehn": 13, "vierzehn": 14, "funfzehn": 15, "sechzehn": 16,
           "siebzehn": 17, "achtzehn": 18, "neunzehn": 19, "zwanzig": 20, "dreißig": 30, "dreissig": 30,
           "vierzig": 40, "funfzig": 50, "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90,
           "hundert": 100, "einhundert": 100, "zweihundert": 200, "dreihundert": 300},
    "bg": {"нула": 0, "единият": 1, "едната": 1, "единственият": 1, "веднъж": 1, "два": 2, "две": 2, "двата": 2,
           "двете": 2, "двама": 2, "двамата": 2, "три": 3, "трите": 3, "трима": 3, "четири": 4, "четирите": 4,
           "пет": 5, "петте": 5, "шест": 6, "седем": 7, "осем": 8, "девет": 9, "десет": 10, "единадесет": 11,
           "дванадесет": 12, "тринадесет": 13, "четиринадесет": 14, "петнадесет": 15, "шестнадесет": 16,
           "седемнадесет": 17, "осемнадесет": 18, "деветнадесет": 19, "двадесет": 20, "тридесет": 30,
           "четиридесет": 40, "петдесет": 50, "шестдесет": 60, "седемдесет": 70, "осемдесет": 80,
           "деветдесет": 90, "сто": 100, "двеста": 200, "триста": 300, "четиристотин": 400, "петстотин": 500,
           "шестстотин": 600, "седемстотин": 700, "осемстотин": 800, "деветстотин": 900, "хиляда": 1000,
           "двойно": 2, "тройно": 3},
    "ru": {"ноль": 0, "один": 1, "одна": 1, "одно": 1, "одного": 1, "одной": 1, "одну": 1, "однажды": 1,
           "единственный": 1, "два": 2, "две": 2, "двух": 2, "двум": 2, "двумя": 2, "оба": 2, "обе": 2,
           "обоих": 2, "дважды": 2, "три": 3, "трех": 3, "трем": 3, "тремя": 3, "трижды": 3, "четыре": 4,
           "четырех": 4, "пять": 5, "пяти": 5, "шесть": 6, "шести": 6, "семь": 7, "семи": 7, "восемь": 8,
           "восьми": 8, "девять": 9, "девяти": 9, "десять": 10, "десяти": 10, "одиннадцать": 11,
           "двенадцать": 12, "двенадцати": 12, "тринадцать": 13, "четырнадцать": 14, "пятнадцать": 15,
           "шестнадцать": 16, "семнадцать": 17, "восемнадцать": 18, "девятнадцать": 19, "двадцать": 20,
           "двадцати": 20, "тридцать": 30, "тридцати": 30, "сорок": 40, "сорока": 40, "пятьдесят": 50,
           "шестьдесят": 60, "семьдесят": 70, "восемьдесят": 80, "девяносто": 90, "сто": 100, "двести": 200,
           "триста": 300, "четыреста": 400, "пятьсот": 500, "шестьсот": 600, "семьсот": 700, "восемьсот": 800,
           "девятьсот": 900, "тысяча": 1000, "вдвое": 2, "втрое": 3},
    "el": {"μηδεν": 0, "δυο": 2, "δυο φορες": 2, "τρια": 3, "τρεις": 3, "τεσσερα": 4, "τεσσερις": 4,
           "πεντε": 5, "εξι": 6, "επτα": 7, "εφτα": 7, "οκτω": 8, "οχτω": 8, "εννεα": 9, "εννια": 9, "δεκα": 10,
           "εντεκα": 11, "δωδεκα": 12, "δεκατρια": 13, "δεκατρεις": 13, "δεκατεσσερα": 14, "δεκατεσσερις": 14,
           "δεκαπεντε": 15, "δεκαεξι": 16, "δεκαεπτα": 17, "δεκαεφτα": 17, "δεκαοκτω": 18, "δεκαοχτω": 18,
           "δεκαεννεα": 19, "δεκαεννια": 19, "εικοσι": 20, "τριαντα": 30, "σαραντα": 40, "πενηντα": 50,
           "εξηντα": 60, "εβδομηντα": 70, "ογδοντα": 80, "ενενηντα": 90, "εκατο": 100, "εκατον": 100,
           "διακοσια": 200, "διακοσιοι": 200, "διακοσιες": 200, "τριακοσια": 300, "τριακοσιοι": 300,
           "τριακοσιες": 300, "τετρακοσια": 400, "πεντακοσια": 500, "χιλια": 1000, "χιλιοι": 1000,
           "χιλιες": 1000, "διπλασιο": 2, "διπλασια": 2, "τριπλασιο": 3},
}  # fmt: skip
NUMBER_AND = {"en": {"and"}, "de": set(), "bg": {"и"}, "ru": set(), "el": {"και"}}  # `two hundred and fifty`
BETWEEN = {"en": {"between"}, "de": {"zwischen"}, "bg": {"между"}, "ru": {"между"}, "el": {"μεταξυ"}}  # a range's
MULTIPLES = {  # number words of times and sets, which never continue a number in words: `forty twice` is no 42
    "en": {"twice", "thrice", "dozen", "both", "single"}, "de": {"einmal", "zweimal", "dreimal", "beide", "beiden"},
    "bg": {"веднъж", "двойно", "тройно"},
    "ru": {"однажды", "дважды", "трижды", "вдвое", "втрое", "оба", "обе", "обоих"},
    "el": {"διπλασιο", "διπλασια", "τριπλασιο"},
}  # fmt: skip
UNITS = {  # one unit, its symbols and its names in every language (a unit is the same in any text)
    "%": "% percent per-cent pct prozent процента процент процентов τοις-εκατο percentage-points percentage-point "
         "prozentpunkte prozentpunkten процентни-пункта процентных-пункта процентных-пунктов ποσοστιαιες-μοναδες",
    "m": "m metre metres meter meters metern метра метър метри метров метрах метрами м μετρα μετρο μετρων μ",
    "km": "km kilometre kilometres kilometer kilometers kilometern километра километър километри километров χιλιομετρα "
          "χιλιομετρο χιλιομετρων χλμ км",
    "cm": "cm centimetre centimetres centimeter centimeters zentimeter zentimetern сантиметра сантиметър сантиметров "
          "см εκατοστα εκ",
    "mm": "mm millimetre millimetres millimeter millimeters millimetern милиметра милиметър миллиметров мм χιλιοστα "
          "χιλιοστων",
    "kg": "kg kilogram kilograms kilogramme kilogramm килограма килограм килограмм килограмма килограммов кг κιλα κιλο",
    "g": "g gram grams gramm грама грам граммов гр г γραμμαρια",
    "mg": "mg milligram milligrams milligramm милиграма милиграм миллиграмм миллиграмма миллиграммов мг",
    "t": "t tonne tonnes ton tons tonnen тона тон тонн τονοι τονων",
    "l": "l litre litres liter liters litern литра литър литров л λιτρα λιτρων",
    "ml": "ml millilitre millilitres milliliter milliliters millilitern милилитра миллилитров миллилитрами мл",
    "h": "h hour hours hr hrs stunde stunden часа час часов ωρες ωρα ωρων",
    "min": "min minute minutes minuten минути минута минут λεπτα λεπτο",
    "s": "s second seconds sekunde sekunden секунди секунда секунд δευτερολεπτα",
    "ms": "ms millisecond milliseconds millisekunde millisekunden милисекунди милисекунда миллисекунд мс "
          "χιλιοστα-του-δευτερολεπτου",
    "day": "day days tag tage tagen ден дни дена деня день дня дней сутки μερα μερες ημερα ημερες ημερων",
    "week": "week weeks woche wochen седмица седмици неделя недели недель εβδομαδα εβδομαδες",
    "month": "month months monat monate monaten месец месеца месеци месяц месяца месяцев μηνας μηνες μηνων",
    "year": "year years yr jahr jahre jahren jahres година години годината г год года году лет летие χρονια χρονο "
            "ετος ετη ετων χρονων",
    "c": "°c celsius degree degrees grad градуса градус градусов целзий целзия цельсия βαθμους βαθμοι βαθμων "
         "κελσιου",
    "m3": "m3 cubic-metre cubic-metres cubic-meter cubic-meters kubikmeter кубически-метра кубических-метров "
          "кубометров κυβικα-μετρα",
    "km2": "km2 square-kilometre square-kilometres square-kilometer square-kilometers quadratkilometer "
           "квадратни-километра квадратных-километров τετραγωνικα-χιλιομετρα",
    "ha": "ha hectare hectares hektar хектара хектар ха гектара гектаров га εκταρια εκταριων",
    "w": "w watt watts ватт вата вт",
    "kw": "kw kilowatt kilowatts киловат киловата киловатт квт",
    "mw": "mw megawatt megawatts мегават мегавата мегаватт мвт",
    "db": "db decibel decibels dezibel децибела децибел",
    "bar": "bar бар бара",
    "times": "times mal пъти раз раза φορες φορα",
    "eur": "€ eur euro euros евро ευρω",
    "gbp": "£ gbp pound pounds pfund паунд паунда фунт фунта фунтов λιρες λιρα",
    "usd": "$ usd dollar dollars dollar долар долара долари доллар доллара долларов δολαρια δολαριο",
    "bgn": "bgn лв лев лева",
    "rub": "₽ rub руб рубль рубля рублей",
    "krone": "nok dkk sek krone kroner kronen krona kronor крони кроны",
}  # fmt: skip
CURRENCIES = {"eur", "gbp", "usd", "bgn", "rub", "krone"}  # units that may stand before their number: `£65`, `NOK 2.4`
DISCOURSE = {  # words that tie claims together and claim nothing of their own
    "en": {"although", "though", "however", "also", "whereas", "thus", "therefore", "moreover"},
    "de": {"jedoch", "allerdings", "also", "zudem", "außerdem", "ausserdem", "dennoch", "demnach", "somit"},
    "bg": {"обаче", "също", "въпреки", "затова"},
    "ru": {"однако", "также", "тоже", "хотя", "поэтому", "притом"},
    "el": {"ωστοσο", "ομως", "επισης", "επομενως"},
}  # fmt: skip
DECIMAL_POINT = {"en": {"point"}, "de": {"komma"}, "bg": {"цяло"}, "ru": set(), "el": {"κομμα"}}  # `seven point nine`
LIGHT_VERBS = {  # verbs that claim nothing of their own (by lemma): the copula, `remain`, `have`, and the
    # verbs that tie a subject to a measure or a place (`measures`, `liegt bei`, `is located`); the claim is
    # in their objects. Verbs of parts (`consists of`, `made up of`) relate things: a claim
    "en": {"be", "remain", "have", "measure", "total", "amount", "cost"},
    "de": {"sein", "werden", "bleiben", "haben", "betragen", "liegen", "befinden", "kosten"},
    "bg": {"съм", "бъда", "оставам", "имам", "намирам", "струвам"},
    "ru": {"быть", "являться", "оставаться", "иметь", "составлять", "находиться", "стоить"},
    "el": {"ειμαι", "μενω", "εχω", "βρισκω", "κοστιζω"},
}  # fmt: skip
DIMENSIONS = {  # what a length is measured along, one pole per dimension: `340 km long` claims `340 km`
    # where the sources name no other dimension
    "en": ["long length", "high tall height", "wide width", "deep depth"],
    "de": ["lang lange langer", "hoch hohe hoher hohen", "breit breite", "tief tiefe"],
    "bg": ["дълъг дълга дълго дължина", "висок висока високо височина", "широк широка широко ширина",
           "дълбок дълбока дълбоко дълбочина"],
    "ru": ["длиной длина длину длинный", "высотой высота высоту высокий", "шириной ширина ширину",
           "глубиной глубина глубину"],
    "el": ["μηκος μακρυς", "υψος ψηλος", "πλατος", "βαθος"],
}  # fmt: skip
COMPARISON = {  # words that compare two things: a difference of two numbers is worked out only beside one
    "en": {"than", "more", "less", "fewer", "difference", "higher", "lower", "longer", "shorter", "larger", "smaller",
           "bigger", "older", "younger", "earlier", "later", "deeper", "wider", "taller", "heavier", "faster"},
    "de": {"als", "mehr", "weniger", "unterschied", "hoher", "langer", "kurzer", "großer", "grosser", "kleiner",
           "alter", "junger", "fruher", "spater", "tiefer", "breiter", "schwerer", "schneller"},
    "bg": {"отколкото", "по", "повече", "разлика"},
    "ru": {"чем", "больше", "меньше", "более", "менее", "разница", "выше", "ниже", "дальше", "ближе", "старше",
           "моложе", "раньше", "позже", "позднее", "глубже", "шире", "уже", "тяжелее", "короче", "длиннее"},
    "el": {"περισσοτερο", "περισσοτερα", "λιγοτερο", "λιγοτερα", "διαφορα"},
}  # fmt: skip
EXCEPT = {  # a source sentence with one states the other pole of what it excepts: `open daily except Mondays`
    "en": {"except", "excluding"}, "de": {"außer", "ausser", "ausgenommen", "ausnahme"}, "bg": {"освен", "изключение"},
    "ru": {"кроме", "исключением"}, "el": {"εκτος", "πλην", "εξαιρεση"},
}  # fmt: skip
EQUATIVE = {"en": {"as"}, "de": {"wie"}, "bg": {"като"}, "ru": {"как"}, "el": {"οσο"}}  # `(five times) as long as`
THAN = {  # the word after a comparative that names what is compared against: `larger than X`, `größer als X`
    "en": {"than"}, "de": {"als"}, "bg": {"от", "отколкото"}, "ru": {"чем"}, "el": {"απο", "απ"},
}  # fmt: skip
CHANGE = {  # words that say a quantity changed: the change is the difference of two the sources give
    "en": {"increased", "increase", "rose", "grew", "fell", "dropped", "decreased", "declined", "gap"},
    "de": {"gestiegen", "stieg", "wuchs", "gewachsen", "gesunken", "sank", "zugenommen", "abgenommen"},
    "bg": {"увеличил", "увеличила", "увеличило", "увеличили", "увеличи", "нарасна", "нараснал", "намаля", "намалял",
           "намаляла", "спаднал", "спадна"},
    "ru": {"вырос", "выросла", "выросло", "выросли", "увеличился", "увеличилась", "увеличилось", "уменьшился",
           "уменьшилось", "сократилось", "снизилось", "снизился"},
    "el": {"αυξηθηκε", "αυξηθηκαν", "μειωθηκε", "μειωθηκαν"},
}  # fmt: skip
REST = {  # words that speak of what is left of a whole: `the other 60 percent`, `apart from 23 grandmasters, 163`
    "en": {"other", "others", "rest", "remaining", "remainder", "apart", "besides", "except"},
    "de": {"ubrigen", "restlichen", "rest", "weitere", "weiteren", "anderen", "außer", "ausser", "neben"},
    "bg": {"останалите", "остават", "останали", "други", "другите", "освен", "извън"},
    "ru": {"остальные", "остальных", "остальным", "оставшиеся", "другие", "других", "помимо", "кроме", "еще"},
    "el": {"υπολοιποι", "υπολοιπες", "υπολοιπα", "υπολοιπο", "αλλοι", "αλλες", "αλλα", "εκτος"},
}  # fmt: skip
AGGREGATE = {  # words that make a number a working of others: an average, a share each, a total
    "en": {"average", "each", "per", "together", "combined", "total", "altogether", "apiece"},
    "de": {"durchschnitt", "durchschnittlich", "je", "pro", "zusammen", "insgesamt", "gesamt", "jeweils"},
    "bg": {"средно", "всяко", "всеки", "всяка", "общо", "заедно", "на"},
    "ru": {"среднем", "средний", "каждый", "каждая", "каждое", "всего", "вместе", "итого", "на"},
    "el": {"μεσο", "μεσος", "καθε", "συνολικα", "μαζι", "ανα"},
}  # fmt: skip
COMPARATIVE_ENDINGS = {"en": (), "de": (), "bg": (), "ru": ("ее",), "el": ("τερο", "τερη", "τερα", "τερος", "τερες")}
TIME_UNITS = {"h", "min", "s", "ms", "day", "week", "month", "year"}
SCALES = {  # unit -> (dimension, size in the dimension's base unit): one amount in two units is one claim
    "ms": ("time", 0.001), "s": ("time", 1), "min": ("time", 60), "h": ("time", 3600), "day": ("time", 86400),
    "week": ("time", 604800), "month": ("time", 2629800), "year": ("time", 31557600),
    "mm": ("length", 0.001), "cm": ("length", 0.01), "m": ("length", 1), "km": ("length", 1000),
    "mg": ("mass", 0.001), "g": ("mass", 1), "kg": ("mass", 1000), "t": ("mass", 1000000),
    "ml": ("volume", 0.001), "l": ("volume", 1), "w": ("power", 1), "kw": ("power", 1000), "mw": ("power", 1000000),
}  # fmt: skip
FREQUENCY = {  # a word that is "once per <unit>"
    "en": {"daily": "day", "weekly": "week", "monthly": "month", "yearly": "year", "annually": "year",
           "hourly": "h"},
    "de": {"taglich": "day", "wochentlich": "week", "monatlich": "month", "jahrlich": "year", "stundlich": "h"},
    "bg": {"ежедневно": "day", "ежеседмично": "week", "ежемесечно": "month", "ежегодно": "year", "годишно": "year"},
    "ru": {"ежедневно": "day", "еженедельно": "week", "ежемесячно": "month", "ежегодно": "year"},
    "el": {"καθημερινα": "day", "εβδομαδιαια": "week", "μηνιαια": "month", "ετησιως": "year"},
}  # fmt: skip
ORDINALS = {  # the first ten, in order; a slash between the forms a stem does not join
    "en": "first second third fourth fifth sixth seventh eighth ninth tenth",
    "de": "erste zweite dritte vierte funfte sechste siebte achte neunte zehnte",
    "bg": "първи/първа втори/втора трети/трета четвърти/четвърта пети/пета шести/шеста седми/седма осми/осма "
    "девети/девета десети/десета",
    "ru": "первый второй третий четвертый пятый шестой седьмой восьмой девятый десятый",
    "el": "πρωτος δευτερος τριτος τεταρτος πεμπτος εκτος εβδομος ογδοος ενατος δεκατος",
}
SUPERLATIVE = {  # a word that makes the next one a superlative
    "en": {"most", "least"}, "de": {"am"}, "bg": {"най"}, "ru": {"самый", "самая", "самое", "самой", "самым",
    "наиболее", "наименее"}, "el": {"πιο"},
}  # fmt: skip
# Classes whose members exclude one another: the answer saying one where its source says another
# is a contradiction. Each pole: words separated by spaces (matched whole, by stem, or by lemma).
EXCLUSIVE = {
    "en": [
        ("high higher highest", "low lower lowest"), ("tall taller tallest", "short shorter shortest"),
        ("long longer longest", "short shorter shortest"), ("large larger largest big bigger biggest",
         "small smaller smallest little"), ("more greater", "fewer less lesser"),
        ("increase increases rise raise raises", "decrease decreases reduce reduces lower lowers fall falls drop"),
        ("north northern", "south southern",
         "east eastern", "west western"), ("left", "right"), ("early earlier earliest", "late later latest"),
        ("hot hotter warm", "cold colder cool"), ("safe safer", "dangerous unsafe harmful"), ("mild milder",
         "severe serious"), ("common commonly often frequent frequently usually", "rare rarely seldom uncommon"),
        ("always", "never", "sometimes occasionally"), ("before", "after"), ("open opened", "closed close"),
        ("strong stronger", "weak weaker"), ("fast faster quick", "slow slower"), ("heavy heavier", "light lighter"),
        ("wide wider", "narrow narrower"), ("deep deeper", "shallow"), ("new newer newest", "old older oldest"),
        ("cheap cheaper", "expensive"), ("first", "last"), ("maximum", "minimum"), ("inside internal indoors",
         "outside external outdoors"), ("upper", "lower"), ("gain gains", "loss lose loses"), ("allowed permitted",
         "forbidden banned prohibited"), ("oral mouth swallowed", "injected injection intravenous"),
        ("spring", "summer", "autumn fall", "winter"), ("public", "private"), ("positive", "negative"),
        ("success successful", "failure"), ("easy easier", "difficult hard harder"), ("wet", "dry"),
        ("iron", "steel", "wood wooden timber", "stone", "concrete", "glass", "aluminium aluminum", "copper",
         "brick", "plastic", "gold", "silver"), ("red", "blue", "green", "yellow", "black", "white"),
        ("morning", "evening", "night"), ("once", "twice", "thrice"),
        ("men male", "women female"), ("adults adult", "children child kids"),
        ("upstream", "downstream"), ("above", "below"), ("rural", "urban"),
    ],
    "de": [
        ("hoch hoher hochste hohe hohen", "niedrig niedriger niedrigste tief"), ("lang langer langste lange",
         "kurz kurzer kurzeste"), ("groß großer großte grosse", "klein kleiner kleinste"), ("mehr", "weniger"),
        ("steigt steigen erhoht erhohen", "sinkt sinken senkt senken"), ("norden nord nordlich", "suden sud sudlich",
         "osten ost ostlich", "westen west westlich"), ("links linken linke", "rechts rechten rechte"),
        ("fruh fruher", "spat spater"), ("heiß warm", "kalt kuhl"), ("sicher", "gefahrlich unsicher"),
        ("leicht leichte mild", "schwer schwere"), ("haufig oft", "selten"), ("immer", "nie niemals",
         "manchmal gelegentlich"), ("vor", "nach"), ("offen geoffnet", "geschlossen"), ("stark", "schwach"),
        ("schnell", "langsam"), ("breit", "schmal"), ("neu neue neuen", "alt alte alten"), ("billig", "teuer"),
        ("erste", "letzte"), ("maximal", "minimal"), ("innen", "außen"), ("fruhling", "sommer", "herbst", "winter"),
        ("eisen schmiedeeisen", "stahl", "holz", "stein", "beton", "glas", "aluminium", "kupfer", "ziegel"),
        ("rot", "blau", "grun", "gelb", "schwarz", "weiß"), ("erwachsene erwachsenen", "kinder kindern"),
        ("oberhalb", "unterhalb"), ("laut", "leise"), ("erlaubt zulassig gestattet", "verboten untersagt"),
    ],
    "bg": [
        ("високо висок висока високи по-висок", "ниско нисък ниска ниски по-нисък"), ("дълъг дълга дълго дълги",
         "къс кратък кратка"), ("голям голяма големи по-голям", "малък малка малки по-малък"), ("повече", "по-малко"),
        ("север северен северна", "юг южен южна", "изток източен източна", "запад западен западна"),
        ("левия левият ляв лява", "десния десният десен дясна"), ("рано ранен", "късно късен"),
        ("горещ топъл горещо", "студен студено"), ("безопасен безопасна безопасно", "опасен опасна опасно"),
        ("лек лека леки", "тежък тежка тежки"), ("често чест", "рядко рядък"), ("винаги", "никога", "понякога"),
        ("преди", "след"), ("отворен", "затворен"), ("силен", "слаб"), ("бърз бързо", "бавен бавно"),
        ("широк", "тесен"), ("нов нова нови", "стар стара стари"), ("евтин", "скъп"), ("първи", "последен"),
        ("пролет", "лято лятото", "есен", "зима зимата"), ("желязо", "стомана", "дърво дървен", "камък",
         "бетон", "стъкло"), ("червен", "син", "зелен", "жълт", "черен", "бял"), ("възрастни", "деца децата"),
        ("прегрява", "замръзва"), ("увеличава", "намалява"),
        ("разрешено разрешен разрешена разрешени позволено", "забранено забранен забранена забранени"),
    ],
    "ru": [
        ("высокий высокая высокое высоко выше", "низкий низкая низкое низко ниже"), ("длинный длиннее",
         "короткий короче"), ("большой большая больше крупный", "маленький малый меньше"),
        ("больше более", "меньше менее"),
        ("север северный северная", "юг южный южная", "восток восточный восточная", "запад западный западная"),
        ("левый левом левая", "правый правом правая"), ("рано ранний", "поздно поздний"),
        ("горячий теплый жаркий", "холодный прохладный"), ("безопасный безопасен безопасна", "опасный опасен опасна"),
        ("легкий легкие слабый", "тяжелый тяжелые сильный"), ("часто частый", "редко редкий"),
        ("всегда", "никогда", "иногда"), ("до", "после"), ("открыт открытый", "закрыт закрытый"),
        ("быстро быстрый", "медленно медленный"), ("широкий", "узкий"), ("новый", "старый"),
        ("дешевый", "дорогой"), ("первый", "последний"), ("весна весной", "лето летом", "осень осенью", "зима зимой"),
        ("железо чугун", "сталь стальной", "дерево деревянный", "камень", "бетон", "стекло", "алюминий", "медь",
         "кирпич"), ("красный", "синий", "зеленый", "желтый", "черный", "белый"), ("взрослые взрослых", "дети детей"),
        ("увеличивает растет", "уменьшает снижает падает"),
        ("разрешено разрешен разрешена разрешены", "запрещено запрещен запрещена запрещены"),
    ],
    "el": [
        ("υψηλος υψηλη υψηλο ψηλος ψηλη ψηλο", "χαμηλος χαμηλη χαμηλο"), ("μακρυς μακρια μεγαλυτερο", "κοντος κοντη"),
        ("μεγαλος μεγαλη μεγαλο", "μικρος μικρη μικρο"), ("περισσοτερο περισσοτερα περισσοτερες", "λιγοτερο λιγοτερα"),
        ("βορεια βορειο βορρα", "νοτια νοτιο νοτο", "ανατολικα ανατολικο", "δυτικα δυτικο"), ("αριστερα", "δεξια"),
        ("νωρις", "αργα"), ("ζεστος", "κρυος"), ("ασφαλης ασφαλες", "επικινδυνος επικινδυνο"),
        ("ηπιος ηπια ηπιες", "σοβαρος σοβαρη σοβαρες"), ("συχνα συχνος", "σπανια σπανιος"),
        ("παντα", "ποτε", "μερικες"), ("πριν", "μετα"), ("ανοιχτος", "κλειστος"), ("γρηγορα", "αργα"),
        ("νεος νεα", "παλιος παλια"), ("φθηνος", "ακριβος"), ("πρωτος", "τελευταιος"),
        ("ανοιξη", "καλοκαιρι", "φθινοπωρο", "χειμωνα χειμωνας"), ("σιδερο", "χαλυβα", "ξυλο", "πετρα", "μπετον",
         "γυαλι"), ("κοκκινος", "μπλε", "πρασινος", "κιτρινος", "μαυρος", "ασπρος λευκος"),
        ("ενηλικες ενηλικοι", "παιδια"), ("αυξανει", "μειωνει"),
        ("επιτρεπεται επιτρεπονται", "απαγορευεται απαγορευονται"),
    ],
}  # fmt: skip
