"""Few-shot examples for base language models: three short parallel sentences written for this
project (not taken from any evaluation set), in every supported language."""

from __future__ import annotations

EXAMPLES: tuple[dict[str, str], ...] = (
    {
        "en": "The museum opens at nine o'clock and closes at five in the afternoon.",
        "es": "El museo abre a las nueve y cierra a las cinco de la tarde.",
        "pt": "O museu abre às nove horas e fecha às cinco da tarde.",
        "de": "Das Museum öffnet um neun Uhr und schließt um fünf Uhr nachmittags.",
        "fr": "Le musée ouvre à neuf heures et ferme à cinq heures de l'après-midi.",
    },
    {
        "en": "Scientists say the new species was found in a remote forest last year.",
        "es": "Los científicos dicen que la nueva especie fue encontrada en un bosque remoto el año pasado.",
        "pt": "Os cientistas dizem que a nova espécie foi encontrada em uma floresta remota no ano passado.",
        "de": "Wissenschaftler sagen, dass die neue Art letztes Jahr in einem abgelegenen Wald gefunden wurde.",
        "fr": "Les scientifiques affirment que la nouvelle espèce a été découverte dans une forêt isolée l'année dernière.",
    },
    {
        "en": "If you travel by train, remember to buy your ticket before you board.",
        "es": "Si viaja en tren, recuerde comprar su billete antes de subir.",
        "pt": "Se você viajar de trem, lembre-se de comprar a passagem antes de embarcar.",
        "de": "Wenn Sie mit dem Zug reisen, denken Sie daran, Ihre Fahrkarte vor dem Einsteigen zu kaufen.",
        "fr": "Si vous voyagez en train, n'oubliez pas d'acheter votre billet avant de monter à bord.",
    },
)


def builtin_examples(source: str, target: str) -> tuple[tuple[str, str], ...]:
    return tuple((e[source], e[target]) for e in EXAMPLES)
