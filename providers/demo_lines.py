"""The demo director's script lines, per language: an opener and a call to action naming
the brand, and short sentences to fill the slot with, calm or energetic. Every language
of the sample catalogue has its lines; another gets the English ones, and the director's
reply says so (``has_lines``).

The sentences are generic on purpose (a bank, a noodle, a rail pass) and short, so a
script can be filled to within a second of its target in whole sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Lines:
    opener: tuple[str, str]  # (calm, energetic), each with {brand}
    cta: tuple[str, str]
    calm: tuple[str, ...]
    energetic: tuple[str, ...]
    joiner: str = " "  # between sentences of one line ("" where words are not spaced)

    def join(self, sentences: list[str]) -> str:
        return self.joiner.join(sentences)


LINES: dict[str, Lines] = {
    "en": Lines(
        opener=("Meet {brand}.", "{brand} is here!"),
        cta=("Try {brand} today.", "Get {brand} now!"),
        calm=(
            "Made for the way you live.",
            "Simple to start, easy to love.",
            "Everyone at home can enjoy it.",
            "It fits right into your day.",
            "Quality you can count on.",
            "Less hassle, more of what matters.",
            "Set it up in minutes.",
            "There is something here for everyone.",
        ),
        energetic=(
            "Made for right now!",
            "Big value, zero hassle!",
            "Everyone is talking about it!",
            "Start in seconds!",
            "Your new favourite is here!",
            "Do more, enjoy more!",
            "Bring everyone along!",
            "Do not miss out!",
        ),
    ),
    "th": Lines(
        opener=("พบกับ {brand}", "{brand} มาแล้ว!"),
        cta=("ลอง {brand} วันนี้", "รับ {brand} เลยตอนนี้!"),
        calm=(
            "ออกแบบมาเพื่อชีวิตของคุณ",
            "เริ่มต้นง่าย ใช้งานสะดวก",
            "ทุกคนในบ้านใช้ได้",
            "เข้ากับทุกวันของคุณ",
            "คุณภาพที่ไว้ใจได้",
            "ยุ่งยากน้อยลง มีความสุขมากขึ้น",
            "ตั้งค่าได้ในไม่กี่นาที",
            "มีสิ่งดีๆ สำหรับทุกคน",
        ),
        energetic=(
            "ทำมาเพื่อคุณวันนี้!",
            "คุ้มสุดๆ ไม่ยุ่งยาก!",
            "ใครๆ ก็พูดถึง!",
            "เริ่มได้ทันที!",
            "ของโปรดใหม่ของคุณมาแล้ว!",
            "ทำได้มากขึ้น สนุกมากขึ้น!",
            "ชวนทุกคนมาด้วยกัน!",
            "ห้ามพลาด!",
        ),
    ),
    "id": Lines(
        opener=("Kenalan dengan {brand}.", "{brand} sudah hadir!"),
        cta=("Coba {brand} hari ini.", "Dapatkan {brand} sekarang!"),
        calm=(
            "Dibuat untuk cara hidup Anda.",
            "Mudah dimulai, mudah disukai.",
            "Semua orang di rumah bisa menikmatinya.",
            "Pas untuk hari-hari Anda.",
            "Kualitas yang bisa diandalkan.",
            "Lebih praktis, lebih banyak waktu untuk yang penting.",
            "Siap digunakan dalam hitungan menit.",
            "Ada sesuatu untuk semua orang.",
        ),
        energetic=(
            "Dibuat untuk sekarang!",
            "Untung besar, tanpa ribet!",
            "Semua orang membicarakannya!",
            "Mulai dalam hitungan detik!",
            "Favorit baru Anda sudah hadir!",
            "Lakukan lebih banyak, nikmati lebih banyak!",
            "Ajak semua orang!",
            "Jangan sampai ketinggalan!",
        ),
    ),
    "vi": Lines(
        opener=("Xin giới thiệu {brand}.", "{brand} đã có mặt!"),
        cta=("Hãy thử {brand} ngay hôm nay.", "Nhận {brand} ngay!"),
        calm=(
            "Được tạo ra cho cuộc sống của bạn.",
            "Dễ bắt đầu, dễ yêu thích.",
            "Cả nhà đều có thể tận hưởng.",
            "Phù hợp với mỗi ngày của bạn.",
            "Chất lượng bạn có thể tin tưởng.",
            "Bớt phiền phức, thêm điều ý nghĩa.",
            "Cài đặt chỉ trong vài phút.",
            "Có điều gì đó dành cho mọi người.",
        ),
        energetic=(
            "Dành cho bạn ngay hôm nay!",
            "Giá trị lớn, không rắc rối!",
            "Ai cũng đang nói về nó!",
            "Bắt đầu chỉ trong vài giây!",
            "Món yêu thích mới của bạn đã đến!",
            "Làm nhiều hơn, tận hưởng nhiều hơn!",
            "Rủ cả nhóm cùng tham gia!",
            "Đừng bỏ lỡ!",
        ),
    ),
    "ja": Lines(
        opener=("{brand}をご紹介します。", "{brand}、登場！"),
        cta=("今日から{brand}をお試しください。", "今すぐ{brand}を！"),
        calm=(
            "あなたの暮らしのために作られました。",
            "始めやすく、使いやすい。",
            "家族みんなで楽しめます。",
            "毎日にぴったりです。",
            "信頼できる品質です。",
            "手間を減らして、大切な時間を増やしましょう。",
            "数分ですぐに始められます。",
            "誰にでも楽しめるものがあります。",
        ),
        energetic=(
            "今こそ、あなたに！",
            "お得で、簡単！",
            "みんなが話題にしています！",
            "すぐに始められる！",
            "新しいお気に入りが登場！",
            "もっと楽しもう！",
            "みんなで一緒に！",
            "お見逃しなく！",
        ),
        joiner="",
    ),
    "zh": Lines(
        opener=("认识一下{brand}。", "{brand}来了！"),
        cta=("今天就试试{brand}。", "现在就选{brand}！"),
        calm=(
            "为你的生活而设计。",
            "上手简单，越用越喜欢。",
            "全家人都能享受。",
            "完美融入你的每一天。",
            "值得信赖的品质。",
            "少一点麻烦，多一点精彩。",
            "几分钟就能开始。",
            "每个人都能找到喜欢的。",
        ),
        energetic=(
            "就是现在！",
            "超值又省心！",
            "大家都在讨论！",
            "几秒钟就能开始！",
            "你的新宠来了！",
            "玩得更多，享受更多！",
            "叫上所有人！",
            "千万别错过！",
        ),
        joiner="",
    ),
    "ko": Lines(
        opener=("{brand}를 만나보세요.", "{brand}가 왔어요!"),
        cta=("오늘 {brand}를 경험해 보세요.", "지금 바로 {brand}!"),
        calm=(
            "당신의 삶을 위해 만들었습니다.",
            "시작은 쉽고, 사용은 편리합니다.",
            "온 가족이 함께 즐길 수 있습니다.",
            "매일의 일상에 꼭 맞습니다.",
            "믿을 수 있는 품질입니다.",
            "번거로움은 줄이고, 소중한 것은 더하세요.",
            "몇 분이면 시작할 수 있습니다.",
            "모두를 위한 무언가가 있습니다.",
        ),
        energetic=(
            "바로 지금을 위해!",
            "큰 혜택, 번거로움 제로!",
            "모두가 이야기하고 있어요!",
            "몇 초 만에 시작하세요!",
            "새로운 최애가 왔어요!",
            "더 많이 하고, 더 많이 즐기세요!",
            "모두 함께해요!",
            "놓치지 마세요!",
        ),
    ),
    "es": Lines(
        opener=("Conoce {brand}.", "¡Llegó {brand}!"),
        cta=("Prueba {brand} hoy.", "¡Consigue {brand} ya!"),
        calm=(
            "Pensado para tu manera de vivir.",
            "Fácil de empezar, fácil de querer.",
            "Toda la familia puede disfrutarlo.",
            "Se adapta a tu día a día.",
            "Calidad en la que puedes confiar.",
            "Menos complicaciones, más de lo que importa.",
            "Listo en pocos minutos.",
            "Hay algo para todos.",
        ),
        energetic=(
            "¡Hecho para ahora!",
            "¡Mucho valor, cero complicaciones!",
            "¡Todos hablan de ello!",
            "¡Empieza en segundos!",
            "¡Tu nuevo favorito ya está aquí!",
            "¡Haz más, disfruta más!",
            "¡Trae a todos!",
            "¡No te lo pierdas!",
        ),
    ),
    "pt": Lines(
        opener=("Conheça {brand}.", "Chegou {brand}!"),
        cta=("Experimente {brand} hoje.", "Garanta {brand} agora!"),
        calm=(
            "Feito para o seu jeito de viver.",
            "Fácil de começar, fácil de gostar.",
            "Toda a família pode aproveitar.",
            "Combina com o seu dia a dia.",
            "Qualidade em que você pode confiar.",
            "Menos complicação, mais do que importa.",
            "Pronto em poucos minutos.",
            "Tem algo para todo mundo.",
        ),
        energetic=(
            "Feito para agora!",
            "Muito valor, zero complicação!",
            "Todo mundo está falando disso!",
            "Comece em segundos!",
            "Seu novo favorito chegou!",
            "Faça mais, aproveite mais!",
            "Chame todo mundo!",
            "Não perca!",
        ),
    ),
    "de": Lines(
        opener=("Entdecke {brand}.", "{brand} ist da!"),
        cta=("Probier {brand} noch heute.", "Hol dir {brand} jetzt!"),
        calm=(
            "Gemacht für die Art, wie du lebst.",
            "Einfach zu starten, leicht zu lieben.",
            "Die ganze Familie kann es genießen.",
            "Es passt perfekt in deinen Alltag.",
            "Qualität, auf die du dich verlassen kannst.",
            "Weniger Aufwand, mehr von dem, was zählt.",
            "In wenigen Minuten startklar.",
            "Hier ist für jeden etwas dabei.",
        ),
        energetic=(
            "Gemacht für jetzt!",
            "Viel drin, null Stress!",
            "Alle reden darüber!",
            "In Sekunden startklar!",
            "Dein neuer Favorit ist da!",
            "Mehr erleben, mehr genießen!",
            "Nimm alle mit!",
            "Nicht verpassen!",
        ),
    ),
    "fr": Lines(
        opener=("Découvrez {brand}.", "{brand} est là !"),
        cta=("Essayez {brand} dès aujourd'hui.", "Profitez de {brand} maintenant !"),
        calm=(
            "Pensé pour votre façon de vivre.",
            "Facile à commencer, facile à adopter.",
            "Toute la famille peut en profiter.",
            "Il s'intègre à votre quotidien.",
            "Une qualité sur laquelle compter.",
            "Moins de tracas, plus de ce qui compte.",
            "Prêt en quelques minutes.",
            "Il y en a pour tout le monde.",
        ),
        energetic=(
            "Fait pour maintenant !",
            "Plein d'avantages, zéro tracas !",
            "Tout le monde en parle !",
            "Lancez-vous en quelques secondes !",
            "Votre nouveau favori est là !",
            "Faites plus, profitez plus !",
            "Emmenez tout le monde !",
            "À ne pas manquer !",
        ),
    ),
    "it": Lines(
        opener=("Scopri {brand}.", "Arriva {brand}!"),
        cta=("Prova {brand} oggi.", "Scegli {brand} adesso!"),
        calm=(
            "Pensato per il tuo modo di vivere.",
            "Facile da iniziare, facile da amare.",
            "Tutta la famiglia può goderselo.",
            "Si adatta alla tua giornata.",
            "Una qualità su cui contare.",
            "Meno pensieri, più di ciò che conta.",
            "Pronto in pochi minuti.",
            "C'è qualcosa per tutti.",
        ),
        energetic=(
            "Fatto per adesso!",
            "Tanto valore, zero pensieri!",
            "Ne parlano tutti!",
            "Si parte in pochi secondi!",
            "Il tuo nuovo preferito è qui!",
            "Fai di più, goditi di più!",
            "Porta tutti con te!",
            "Non perdertelo!",
        ),
    ),
    "nl": Lines(
        opener=("Maak kennis met {brand}.", "{brand} is er!"),
        cta=("Probeer {brand} vandaag nog.", "Haal {brand} nu in huis!"),
        calm=(
            "Gemaakt voor jouw manier van leven.",
            "Makkelijk om mee te beginnen.",
            "Het hele gezin kan ervan genieten.",
            "Het past gewoon in je dag.",
            "Kwaliteit waar je op kunt rekenen.",
            "Minder gedoe, meer van wat telt.",
            "In een paar minuten geregeld.",
            "Er is voor ieder wat wils.",
        ),
        energetic=(
            "Gemaakt voor nu!",
            "Veel waarde, nul gedoe!",
            "Iedereen heeft het erover!",
            "Binnen een paar seconden begonnen!",
            "Je nieuwe favoriet is er!",
            "Doe meer, geniet meer!",
            "Neem iedereen mee!",
            "Mis het niet!",
        ),
    ),
    "pl": Lines(
        opener=("Poznaj {brand}.", "{brand} już jest!"),
        cta=("Wypróbuj {brand} już dziś.", "Wybierz {brand} teraz!"),
        calm=(
            "Stworzone dla twojego stylu życia.",
            "Łatwo zacząć, łatwo polubić.",
            "Cała rodzina może z tego korzystać.",
            "Pasuje do każdego dnia.",
            "Jakość, na której możesz polegać.",
            "Mniej kłopotu, więcej tego, co ważne.",
            "Gotowe w kilka minut.",
            "Każdy znajdzie coś dla siebie.",
        ),
        energetic=(
            "Stworzone na teraz!",
            "Dużo korzyści, zero kłopotu!",
            "Wszyscy o tym mówią!",
            "Zaczynasz w kilka sekund!",
            "Twój nowy ulubieniec już jest!",
            "Rób więcej, ciesz się bardziej!",
            "Zabierz wszystkich ze sobą!",
            "Nie przegap tego!",
        ),
    ),
    "sv": Lines(
        opener=("Möt {brand}.", "Nu kommer {brand}!"),
        cta=("Prova {brand} redan i dag.", "Skaffa {brand} nu!"),
        calm=(
            "Gjort för hur du lever.",
            "Enkelt att börja, lätt att gilla.",
            "Hela familjen kan njuta av det.",
            "Det passar in i din vardag.",
            "Kvalitet du kan lita på.",
            "Mindre krångel, mer av det som betyder något.",
            "Klart på några minuter.",
            "Det finns något för alla.",
        ),
        energetic=(
            "Gjort för just nu!",
            "Mycket värde, noll krångel!",
            "Alla pratar om det!",
            "Kom igång på några sekunder!",
            "Din nya favorit är här!",
            "Gör mer, njut mer!",
            "Ta med alla!",
            "Missa inte det här!",
        ),
    ),
    "tr": Lines(
        opener=("{brand} ile tanışın.", "{brand} geldi!"),
        cta=("{brand} ürününü bugün deneyin.", "{brand} şimdi sizin olsun!"),
        calm=(
            "Yaşam tarzınız için tasarlandı.",
            "Başlaması kolay, sevmesi kolay.",
            "Tüm aile keyfini çıkarabilir.",
            "Gününüze kolayca uyum sağlar.",
            "Güvenebileceğiniz bir kalite.",
            "Daha az zahmet, daha çok keyif.",
            "Birkaç dakikada hazır.",
            "Herkes için bir şey var.",
        ),
        energetic=(
            "Tam da şimdi için!",
            "Bol avantaj, sıfır zahmet!",
            "Herkes bundan bahsediyor!",
            "Saniyeler içinde başlayın!",
            "Yeni favoriniz geldi!",
            "Daha fazlasını yapın, daha çok keyif alın!",
            "Herkesi yanınızda getirin!",
            "Sakın kaçırmayın!",
        ),
    ),
    "hi": Lines(
        opener=("मिलिए {brand} से।", "{brand} आ गया है!"),
        cta=("आज ही {brand} आज़माइए।", "अभी {brand} पाइए!"),
        calm=(
            "आपकी ज़िंदगी के लिए बनाया गया।",
            "शुरू करना आसान, पसंद करना आसान।",
            "पूरा परिवार इसका आनंद ले सकता है।",
            "यह आपके हर दिन में घुल-मिल जाता है।",
            "ऐसी क्वालिटी जिस पर भरोसा कर सकें।",
            "कम झंझट, ज़्यादा खुशियाँ।",
            "बस कुछ ही मिनटों में तैयार।",
            "यहाँ हर किसी के लिए कुछ है।",
        ),
        energetic=(
            "अभी के लिए बना है!",
            "ज़्यादा फ़ायदा, कोई झंझट नहीं!",
            "सब इसी की बात कर रहे हैं!",
            "पलक झपकते शुरू करें!",
            "आपका नया पसंदीदा आ गया है!",
            "ज़्यादा करें, ज़्यादा मज़ा लें!",
            "सबको साथ लाइए!",
            "मौका मत चूकिए!",
        ),
    ),
    "tl": Lines(
        opener=("Kilalanin ang {brand}.", "Nandito na ang {brand}!"),
        cta=("Subukan ang {brand} ngayon.", "Kunin na ang {brand}!"),
        calm=(
            "Ginawa para sa paraan ng iyong pamumuhay.",
            "Madaling simulan, madaling mahalin.",
            "Masisiyahan ang buong pamilya.",
            "Bagay na bagay sa araw mo.",
            "Kalidad na maaasahan mo.",
            "Mas kaunting abala, mas maraming saya.",
            "Handa na sa loob ng ilang minuto.",
            "May para sa lahat.",
        ),
        energetic=(
            "Ginawa para sa ngayon!",
            "Sulit na sulit, walang abala!",
            "Pinag-uusapan na ng lahat!",
            "Simulan sa ilang segundo!",
            "Nandito na ang bago mong paborito!",
            "Gumawa ng higit pa, mag-enjoy nang higit pa!",
            "Isama ang lahat!",
            "Huwag palampasin!",
        ),
    ),
    "ar": Lines(
        opener=("تعرّف على {brand}.", "{brand} وصل!"),
        cta=("جرّب {brand} اليوم.", "احصل على {brand} الآن!"),
        calm=(
            "صُمّم ليناسب أسلوب حياتك.",
            "سهل البدء، وسهل أن تحبه.",
            "تستمتع به العائلة كلها.",
            "يناسب يومك بكل بساطة.",
            "جودة يمكنك الاعتماد عليها.",
            "عناء أقل، ومتعة أكثر.",
            "جاهز خلال دقائق.",
            "فيه شيء للجميع.",
        ),
        energetic=(
            "صُنع من أجل الآن!",
            "قيمة كبيرة بلا عناء!",
            "الكل يتحدث عنه!",
            "ابدأ في ثوانٍ!",
            "المفضل الجديد لديك وصل!",
            "افعل أكثر، واستمتع أكثر!",
            "ادعُ الجميع!",
            "لا تفوّت الفرصة!",
        ),
    ),
    "ro": Lines(
        opener=("Descoperă {brand}.", "A sosit {brand}!"),
        cta=("Încearcă {brand} chiar azi.", "Alege {brand} acum!"),
        calm=(
            "Gândit pentru felul în care trăiești.",
            "Ușor de început, ușor de îndrăgit.",
            "Toată familia se poate bucura de el.",
            "Se potrivește perfect în ziua ta.",
            "O calitate pe care te poți baza.",
            "Mai puține griji, mai mult din ce contează.",
            "Gata în doar câteva minute.",
            "Există ceva pentru fiecare.",
        ),
        energetic=(
            "Făcut pentru acum!",
            "Valoare mare, zero bătăi de cap!",
            "Toată lumea vorbește despre asta!",
            "Începi în câteva secunde!",
            "Noul tău favorit a sosit!",
            "Fă mai mult, bucură-te mai mult!",
            "Adu-i pe toți!",
            "Nu rata ocazia!",
        ),
    ),
    "cs": Lines(
        opener=("Seznamte se s {brand}.", "{brand} je tady!"),
        cta=("Vyzkoušejte {brand} ještě dnes.", "Pořiďte si {brand} hned teď!"),
        calm=(
            "Vytvořeno pro váš způsob života.",
            "Snadno začnete a rychle si oblíbíte.",
            "Užije si to celá rodina.",
            "Hodí se do každého dne.",
            "Kvalita, na kterou se můžete spolehnout.",
            "Méně starostí, víc toho, na čem záleží.",
            "Připraveno za pár minut.",
            "Každý si tu najde to své.",
        ),
        energetic=(
            "Stvořeno pro teď!",
            "Spousta výhod, žádné starosti!",
            "Všichni o tom mluví!",
            "Začnete během pár vteřin!",
            "Váš nový favorit je tady!",
            "Dělejte víc, užívejte si víc!",
            "Vezměte všechny s sebou!",
            "Nenechte si to ujít!",
        ),
    ),
}

# Traditional characters where the market reads them (Taiwan, Hong Kong, Macau).
TRADITIONAL_CHINESE = Lines(
    opener=("認識一下{brand}。", "{brand}來了！"),
    cta=("今天就試試{brand}。", "現在就選{brand}！"),
    calm=(
        "為你的生活而設計。",
        "上手簡單，越用越喜歡。",
        "全家人都能享受。",
        "完美融入你的每一天。",
        "值得信賴的品質。",
        "少一點麻煩，多一點精彩。",
        "幾分鐘就能開始。",
        "每個人都能找到喜歡的。",
    ),
    energetic=(
        "就是現在！",
        "超值又省心！",
        "大家都在討論！",
        "幾秒鐘就能開始！",
        "你的新寵來了！",
        "玩得更多，享受更多！",
        "叫上所有人！",
        "千萬別錯過！",
    ),
    joiner="",
)
_TRADITIONAL_MARKETS = {"TW", "HK", "MO"}


def lines_for(language: str, market: str = "") -> Lines:
    """The lines of ``language`` (an ISO 639-1 code) as its ``market`` writes it (Chinese
    in Traditional characters in Taiwan and Hong Kong), or the English ones for a language
    without lines here (``has_lines`` says so, for the director to say it)."""
    code = language.split("-")[0].lower()
    if code == "zh" and market.strip().upper() in _TRADITIONAL_MARKETS:
        return TRADITIONAL_CHINESE
    return LINES.get(code, LINES["en"])


def has_lines(language: str) -> bool:
    return language.split("-")[0].lower() in LINES


_POSSESSIVE = re.compile("['\u2019]s$")
_ARTICLES = {"a", "an", "the"}


def brand_of(client: str) -> str:
    """The brand a script names, from the brief's description: its leading capitalised
    words up to a possessive ("Peloton's app ..." -> "Peloton", "BBVA México's account"
    -> "BBVA México", "Spotify Premium family plan" -> "Spotify Premium"); the first words
    of a description that starts otherwise ("a streaming pass ...")."""
    words = client.split(":")[0].split()
    brand: list[str] = []
    for word in words:
        if not word[:1].isupper() and not word[:1].isdigit() and brand:
            break
        if _POSSESSIVE.search(word):
            brand.append(_POSSESSIVE.sub("", word))
            break
        brand.append(word)
    if not brand or all(w.lower() in _ARTICLES for w in brand):
        brand = words[:3]
    return " ".join(brand[:4]) or client
