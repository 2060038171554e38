# comment
@problemName Toy
@missing true
@dimensions 4
@equalLength false
@classLabel true a b
@data
1,2,3:4,5,6:7,?,9:10,11,12:a
1,2:3,4:5,6:7,NaN:b
